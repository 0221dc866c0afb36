import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import type { BenchReport } from "../../bench/report/types.js";

/**
 * Keeps the bench working: the smoke profile (every scenario, tiny) runs end to end as
 * `npm run bench:smoke` would, against PostgreSQL when reachable, else the embedded
 * database. Only the shape of the result is checked, never a speed: machines are shared.
 */

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
// A bound on a hung bench, not a speed expectation: the smoke run takes well under a minute.
const RUN_TIMEOUT_MS = 150_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBench(args: string[]): Promise<Ran> {
  const env = { ...process.env };
  delete env.DATABASE_URL; // the target is chosen by the arguments alone
  const child = spawn(process.execPath, ["--import", "tsx", "bench/main.ts", ...args], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  // SIGTERM lets the bench clean up (server, scratch databases); SIGKILL if it cannot.
  const term = setTimeout(() => child.kill("SIGTERM"), RUN_TIMEOUT_MS);
  const kill = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS + 20_000);
  return new Promise((resolve) => {
    child.once("close", (code) => {
      clearTimeout(term);
      clearTimeout(kill);
      resolve({ code, stdout, stderr });
    });
  });
}

const finite = (n: unknown) => typeof n === "number" && Number.isFinite(n);

describe("bench smoke", () => {
  it(
    "runs every scenario and writes a well-formed JSON report",
    async () => {
      const dir = await mkdtemp(join(os.tmpdir(), "tp-bench-smoke-"));
      try {
        const out = join(dir, "smoke.json");
        const pgAdminUrl = inject("pgAdminUrl");
        const ran = await runBench([
          "--smoke",
          "--out",
          out,
          ...(pgAdminUrl ? ["--pg", pgAdminUrl] : []),
        ]);
        const output = `${ran.stdout}\n${ran.stderr}`;
        expect(ran.code, output).toBe(0);
        expect(ran.stdout).toMatch(/^scenario\s+figure\s+value\s+target\s+met/m);

        const report = JSON.parse(await readFile(out, "utf8")) as BenchReport;
        expect(report.schema).toBe("team-protocols-bench/1");
        expect(report.profile).toBe("smoke");
        expect(report.machine.cores).toBeGreaterThan(0);
        expect(report.machine.node).toBe(process.version);
        expect(report.database.kind).toBe(pgAdminUrl ? "postgres" : "embedded");
        for (const setting of [
          "version",
          "synchronous_commit",
          "fsync",
          "wal_sync_method",
          "shared_buffers",
        ] as const) {
          expect(report.database.settings?.[setting], setting).toEqual(expect.any(String));
        }

        const s = report.scenarios;
        expect(Object.keys(s).sort()).toEqual(
          [
            "baseline",
            "fanout",
            "latency",
            "memory",
            "protocol",
            "stalled",
            "throughput",
            "h2load",
            "h2load-latency",
          ].sort(),
        );
        for (const [name, outcome] of Object.entries(s)) {
          expect(outcome.status, `${name}: ${JSON.stringify(outcome)}`).toBe("ok");
        }
        if (
          s.baseline.status !== "ok" ||
          s.latency.status !== "ok" ||
          s.throughput.status !== "ok" ||
          s.fanout.status !== "ok" ||
          s.protocol.status !== "ok" ||
          s.memory.status !== "ok" ||
          s.stalled.status !== "ok" ||
          s.h2load.status !== "ok" ||
          s["h2load-latency"].status !== "ok"
        ) {
          return;
        }
        const concurrency = [1, 8, 64];
        expect(s.baseline.result.runs.map((r) => [r.statement, r.concurrency])).toEqual([
          ...concurrency.map((c) => ["insert", c]),
          ...concurrency.map((c) => ["insert+notify", c]),
        ]);
        for (const run of s.baseline.result.runs) expect(finite(run.commitsPerSec)).toBe(true);

        expect(s.latency.result.runs.length).toBeGreaterThan(0);
        for (const run of s.latency.result.runs) {
          // How many arrive in time depends on the machine; that the counts add up does not.
          expect(run.scheduled).toBeGreaterThan(0);
          expect(run.delivered + run.undelivered, JSON.stringify(run)).toBeLessThanOrEqual(
            run.sent,
          );
          expect(run.deliver.count).toBe(run.delivered);
          expect(finite(run.deliver.p99Ms) && finite(run.deliver.p999Ms)).toBe(true);
        }
        expect(s.throughput.result.runs.map((r) => [r.pattern, r.concurrency])).toEqual([
          ...concurrency.map((c) => ["spread", c]),
          ...concurrency.map((c) => ["one-inbox", c]),
          ...concurrency.map((c) => ["rpc-floor", c]),
        ]);
        for (const run of s.throughput.result.runs) {
          expect(run.errors, JSON.stringify(run)).toBe(0);
          expect(finite(run.sendsPerSec)).toBe(true);
        }

        expect(s.fanout.result.rounds.length).toBeGreaterThan(0);
        for (const round of s.fanout.result.rounds) {
          expect(round.missed).toBe(0);
          expect(finite(round.lastMs)).toBe(true);
        }
        expect(s.protocol.result.completed).toBe(s.protocol.result.rounds);
        expect(s.memory.result.levels.length).toBe(2);
        for (const level of s.memory.result.levels) {
          expect(level.rssBytes).toBeGreaterThan(0);
          expect(level.heapUsedBytes).toBeGreaterThan(0);
          expect(finite(level.bytesPerStream)).toBe(true);
        }

        // Default caps, then the caps raised twice (a second round on the same server).
        expect(s.stalled.result.runs.map((r) => r.label)).toEqual([
          "default caps",
          "caps raised",
          "caps raised, second round",
        ]);
        for (const run of s.stalled.result.runs) {
          // Every stream is accounted for: held (stalled) or refused by the member cap.
          expect(run.held + run.refusedByMemberCap, JSON.stringify(run)).toBe(run.streams);
          expect(run.endedOtherwise).toBe(0);
          expect(run.pageBytesHeld).toBe(0);
          expect(finite(run.rssGrowthBytes)).toBe(true);
        }
        expect(s.stalled.result.runs[0]?.held).toBe(16);
        expect(s.stalled.result.runs[1]?.held).toBe(s.stalled.result.runs[1]?.streams);

        // h2load: every target at every shape; every call ended as intended, by the server's
        // count where it keeps one (h2load sees HTTP 200 whatever the grpc-status).
        // The smoke's shapes are small (the full run's are the 1, 64 x 1 and 4 x 32).
        const shapes = s.h2load.result.shapes.map((sh) => [sh.connections, sh.streams]);
        expect(shapes).toEqual([
          [1, 1],
          [4, 1],
          [2, 4],
        ]);
        const targets = [
          "raw-http2",
          "grpc-js",
          "connect-node",
          "send-refused",
          "send-spread",
          "send-one-inbox",
        ];
        expect(
          s.h2load.result.runs.map((r) => [r.target, r.shape.connections, r.shape.streams]),
        ).toEqual(targets.flatMap((t) => shapes.map((sh) => [t, ...sh])));
        for (const run of s.h2load.result.runs) {
          expect(run.failed, JSON.stringify(run)).toBe(0);
          expect(run.wrongOutcome, JSON.stringify(run)).toBe(0);
          expect(finite(run.callsPerSec)).toBe(true);
          if (run.target.startsWith("send-")) {
            const counted = run.serverCounted;
            const intended = run.target === "send-refused" ? "invalidArgument" : "ok";
            expect(counted?.[intended], JSON.stringify(run)).toBeGreaterThanOrEqual(run.calls);
          }
        }
        const h2l = s["h2load-latency"].result;
        expect(h2l.sent).toBeGreaterThan(0);
        expect(h2l.answered, JSON.stringify(h2l)).toBe(h2l.sent);
        // Every answered send is a stored one: a refused send answers HTTP 200 too.
        expect(h2l.stored, JSON.stringify(h2l)).toBeGreaterThanOrEqual(h2l.answered);
        expect(h2l.deliver.count).toBeLessThanOrEqual(h2l.answered);
        expect(finite(h2l.deliver.p99Ms)).toBe(true);

        // Every figure is printable, and each target says whether it is met.
        expect(report.figures.length).toBeGreaterThan(0);
        for (const f of report.figures) {
          expect(f.figure).toEqual(expect.any(String));
          if (f.target) expect(typeof f.met, f.figure).toBe("boolean");
        }
        for (const scenario of [
          "latency",
          "throughput",
          "fanout",
          "memory",
          "stalled",
          "h2load",
          "h2load-latency",
        ]) {
          expect(
            report.figures.some((f) => f.scenario === scenario && f.target),
            `${scenario} has a figure with a target`,
          ).toBe(true);
        }

        // The scratch databases of a PostgreSQL run are gone.
        if (pgAdminUrl) {
          const names = [...output.matchAll(/\btp_bench\w*_[0-9a-f]{12}\b/g)].map((m) => m[0]);
          const client = new pg.Client({ connectionString: pgAdminUrl });
          await client.connect();
          try {
            const left = await client.query(
              "SELECT datname FROM pg_database WHERE datname = ANY($1::text[])",
              [names],
            );
            expect(left.rows).toEqual([]);
          } finally {
            await client.end();
          }
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});
