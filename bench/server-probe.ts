import { monitorEventLoopDelay } from "node:perf_hooks";
import { summarizeLoopDelay } from "./loop-delay.js";

/**
 * Loaded into the servers the bench starts
 * (`node [--expose-gc] --import <the probe, compiled> dist/server/main.js`), so the
 * server's code is measured unchanged. On SIGUSR2: a full garbage collection (only where
 * --expose-gc is given: the memory scenario's server), then one JSON line with
 * process.memoryUsage() and the event loop's delay since the last report, which the bench
 * reads from the server's stdout. Without the collection, garbage left by opening thousands
 * of streams would count as their memory.
 */
declare const gc: (() => void) | undefined;

const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();

process.on("SIGUSR2", () => {
  if (typeof gc === "function") gc();
  const usage = process.memoryUsage();
  const eventLoopDelay = summarizeLoopDelay(loopDelay);
  loopDelay.reset();
  process.stdout.write(`${JSON.stringify({ event: "bench_memory", ...usage, eventLoopDelay })}\n`);
});
