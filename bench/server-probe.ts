/**
 * Loaded into the server process by the memory scenario only
 * (`node --expose-gc --import tsx --import ./bench/server-probe.ts server/main.ts`), so the
 * server's code is measured unchanged. On SIGUSR2: a full garbage collection, then one JSON
 * line with process.memoryUsage(), which the bench reads from the server's stdout. Without
 * the collection, garbage left by opening thousands of streams would count as their memory.
 */
declare const gc: (() => void) | undefined;

process.on("SIGUSR2", () => {
  if (typeof gc === "function") gc();
  const usage = process.memoryUsage();
  process.stdout.write(`${JSON.stringify({ event: "bench_memory", ...usage })}\n`);
});
