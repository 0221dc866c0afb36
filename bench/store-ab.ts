/**
 * A/B of the store's sends between two checkouts, in one run:
 * `npx tsx bench/store-ab.ts --base <other checkout> [--rounds 3] [-- bench:store options]`.
 *
 * Runs bench/store-sends.ts (each checkout's own, with its own server code) alternately in
 * this checkout (B) and the base (A), `rounds` times each, so the machine's load drifts over
 * both alike; prints per case the median sends/s and CPU per send of each, and B/A. The base
 * must have its dependencies installed (npm ci there).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Command } from "commander";

interface Run {
  pattern: string;
  keyed: boolean;
  concurrency: number;
  sendsPerSec: number;
  cpu: { nodeUsPerSend: number; postgresUsPerSend: number };
}

const o = new Command("store-ab")
  .requiredOption("--base <dir>", "the checkout to compare with (A)")
  .option("--rounds <n>", "runs of each checkout", "3")
  .allowExcessArguments()
  .parse();
const { base, rounds } = o.opts<{ base: string; rounds: string }>();
const passThrough = o.args.length > 0 ? o.args : ["--concurrency", "64", "--seconds", "4"];
const runs: Record<"A" | "B", Run[][]> = { A: [], B: [] };
for (let i = 0; i < Number(rounds); i++) {
  for (const [side, dir] of [
    ["A", resolve(base)],
    ["B", process.cwd()],
  ] as const) {
    const out = join(tmpdir(), `store-ab-${process.pid}-${side}-${i}.json`);
    process.stderr.write(`round ${i + 1} ${side} (${dir})\n`);
    execFileSync("npx", ["tsx", "bench/store-sends.ts", ...passThrough, "--out", out], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
    });
    runs[side].push((JSON.parse(readFileSync(out, "utf8")) as { runs: Run[] }).runs);
  }
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const key = (r: Run) => `${r.pattern}${r.keyed ? " keyed" : ""} x${r.concurrency}`;
const pick = (side: "A" | "B", k: string, f: (r: Run) => number) =>
  median(runs[side].map((rs) => rs.find((r) => key(r) === k)).flatMap((r) => (r ? [f(r)] : [])));
const ratio = (b: number, a: number) => (a > 0 ? (b / a).toFixed(2) : "-");
const lines = [
  `A = ${resolve(base)}, B = ${process.cwd()}, medians of ${rounds} alternating runs each`,
  "case                    A sends/s  B sends/s   B/A    A node µs  B node µs   B/A    A pg µs  B pg µs   B/A",
];
for (const k of (runs.B[0] ?? []).map(key)) {
  const [as, bs] = [pick("A", k, (r) => r.sendsPerSec), pick("B", k, (r) => r.sendsPerSec)];
  const [an, bn] = [
    pick("A", k, (r) => r.cpu.nodeUsPerSend),
    pick("B", k, (r) => r.cpu.nodeUsPerSend),
  ];
  const [ap, bp] = [
    pick("A", k, (r) => r.cpu.postgresUsPerSend),
    pick("B", k, (r) => r.cpu.postgresUsPerSend),
  ];
  lines.push(
    [
      k.padEnd(22),
      String(as).padStart(10),
      String(bs).padStart(10),
      ratio(bs, as).padStart(6),
      String(an).padStart(11),
      String(bn).padStart(10),
      ratio(bn, an).padStart(6),
      String(ap).padStart(10),
      String(bp).padStart(8),
      ratio(bp, ap).padStart(6),
    ].join(" "),
  );
}
process.stdout.write(`${lines.join("\n")}\n`);
