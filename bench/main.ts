/**
 * The benchmark: `npm run bench` (full) or `npm run bench:smoke` (tiny, for CI).
 *
 *   npm run bench                    embedded database (PGlite), or DATABASE_URL when set
 *   npm run bench -- --pg [url]      a scratch database on that PostgreSQL (default
 *                                    postgres://postgres@127.0.0.1:5432/postgres), dropped after
 *   npm run bench -- --only latency,fanout
 *
 * Prints a table on stdout (progress on stderr) and writes JSON to bench/results/latest.json
 * (smoke: smoke.json).
 * The server runs as a child process (compiled, as `npm start` runs it; its defaults), so its RSS is its own;
 * the load comes from this process over HTTP/2 (gRPC), and in the h2load scenarios from h2load
 * (Debian's nghttp2-client), with floor servers of bench/floors/ as processes of their own.
 * Exits 1 if any scenario failed.
 */
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { Command, Option } from "commander";
import { parseConfig } from "../server/config.js";
import { type BaselineDb, openBaselineDb, type PgSettings } from "./baseline-db.js";
import { withBudget } from "./bounded.js";
import { Cleanups } from "./cleanup.js";
import { DEFAULT_PG_ADMIN_URL, resolveTarget, type Target } from "./database-target.js";
import { describeMachine, loadAverage1m } from "./machine.js";
import { FULL, type Profile, SMOKE } from "./profile.js";
import { buildFigures } from "./report/figures.js";
import { renderTable } from "./report/table.js";
import {
  type BenchReport,
  type Outcome,
  SCENARIO_NAMES,
  type ScenarioName,
  type Scenarios,
} from "./report/types.js";
import { runBaseline } from "./scenarios/baseline.js";
import type { ScenarioContext } from "./scenarios/context.js";
import { runFanout } from "./scenarios/fanout.js";
import { runH2loadThroughput } from "./scenarios/h2load.js";
import { runH2loadLatency } from "./scenarios/h2load-latency.js";
import { runLatency } from "./scenarios/latency.js";
import { runMemory } from "./scenarios/memory.js";
import { runProtocol } from "./scenarios/protocol.js";
import { runStalled, STALLED_VARIANTS, type StalledRun } from "./scenarios/stalled.js";
import { runThroughput } from "./scenarios/throughput.js";
import { type BenchServer, startBenchServer } from "./server-process.js";

interface Options {
  smoke: boolean;
  pg: string | undefined;
  out: string;
  only: Set<ScenarioName>;
  /** Where the main server's CPU profile goes, when asked for. */
  cpuProfile: string | undefined;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

function parseOptions(argv: string[]): Options {
  const program = new Command("bench")
    .description("Benchmarks of team-protocols against the same database's own limit.")
    .option("--smoke", "every scenario tiny (the whole run well under a minute), for CI", false)
    .addOption(
      new Option(
        "--pg [admin-url]",
        `run against a scratch database created (and dropped) on this PostgreSQL ` +
          `(default ${DEFAULT_PG_ADMIN_URL}) instead of DATABASE_URL or the embedded one`,
      ).preset(DEFAULT_PG_ADMIN_URL),
    )
    .option(
      "--out <file>",
      "where the JSON goes (default bench/results/latest.json; smoke.json with --smoke)",
    )
    .option("--only <scenarios>", `a comma-separated subset of: ${SCENARIO_NAMES.join(", ")}`)
    .option(
      "--cpu-prof",
      "profile the server under load (latency to protocol): a V8 CPU profile next to the JSON, " +
        "<out>.server.cpuprofile.json, for Chrome DevTools or speedscope",
      false,
    )
    .exitOverride()
    .parse(argv, { from: "user" });
  const o = program.opts<{
    smoke: boolean;
    pg?: string;
    out?: string;
    only?: string;
    cpuProf: boolean;
  }>();
  // A smoke run must not overwrite the last full run's figures.
  const out = o.out ?? `bench/results/${o.smoke ? "smoke" : "latest"}.json`;
  const only = new Set<ScenarioName>(SCENARIO_NAMES);
  if (o.only) {
    only.clear();
    for (const name of o.only.split(",").map((s) => s.trim())) {
      if (!(SCENARIO_NAMES as readonly string[]).includes(name)) {
        throw new Error(`--only: unknown scenario "${name}" (${SCENARIO_NAMES.join(", ")})`);
      }
      only.add(name as ScenarioName);
    }
  }
  const cpuProfile = o.cpuProf
    ? resolve(out.replace(/\.json$/, ".server.cpuprofile.json"))
    : undefined;
  return { smoke: o.smoke, pg: o.pg, out: resolve(out), only, cpuProfile };
}

async function runScenario<T>(
  name: ScenarioName,
  options: Options,
  budgetMs: number,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<Outcome<T>> {
  if (!options.only.has(name)) return { status: "skipped" };
  log(`${name}:`);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const result = await withBudget(name, budgetMs, fn);
    return { status: "ok", elapsedMs: elapsed(), result };
  } catch (err) {
    const error = (err as Error).message ?? String(err);
    log(`  ${name} FAILED: ${error}`);
    return { status: "error", elapsedMs: elapsed(), error };
  }
}

/** The server under test, fresh: a folder of its own (embedded) or the target database. */
async function startServer(
  target: Target,
  workDir: string,
  label: string,
  cleanups: Cleanups,
  options: {
    probe?: boolean;
    cpuProfileDir?: string | undefined;
    /** Settings of this server besides the database (limits a scenario raises). */
    env?: Record<string, string>;
  } = {},
): Promise<BenchServer> {
  const env: Record<string, string> = {
    ...options.env,
    ...(target.kind === "postgres"
      ? { DATABASE_URL: target.url }
      : { DATA_DIR: join(workDir, `server-${label.replace(/[^a-z0-9]+/g, "-")}`, "data") }),
  };
  const server = await startBenchServer(env, options);
  cleanups.add(`stop the ${label} server`, () => server.stop());
  log(`server (${label}) at ${server.url}, pid ${server.pid}`);
  return server;
}

/** Moves the main thread's profile (thread 0) out of the work folder, which is removed. */
async function keepMainThreadProfile(dir: string, pid: number, to: string): Promise<void> {
  const main = (await readdir(dir)).find((f) => f.includes(`.${pid}.0.`));
  if (!main) throw new Error(`no CPU profile of the server's main thread in ${dir}`);
  await mkdir(dirname(to), { recursive: true });
  await copyFile(join(dir, main), to);
}

async function runBench(options: Options, cleanups: Cleanups): Promise<BenchReport> {
  const profile: Profile = options.smoke ? SMOKE : FULL;
  const startedAt = new Date().toISOString();
  const started = performance.now();
  const runId = `bench-${randomBytes(3).toString("hex")}`;
  const machine = describeMachine();
  const target = await resolveTarget(
    { pg: options.pg, databaseUrl: process.env.DATABASE_URL },
    cleanups,
  );
  const workDir = await mkdtemp(join(os.tmpdir(), "tp-bench-"));
  cleanups.add(`remove ${workDir}`, () => rm(workDir, { recursive: true, force: true }));
  const where =
    target.kind === "postgres" ? `, database ${new URL(target.url).pathname.slice(1)}` : "";
  log(`bench (${profile.name}) on ${target.kind} (${target.source}${where}), run ${runId}`);

  let baselineDb: BaselineDb | undefined;
  let settings: PgSettings | null = null;
  const scenarios: Scenarios = {
    baseline: await runScenario("baseline", options, profile.baseline.budgetMs, async (signal) => {
      baselineDb = await openBaselineDb(target, options.pg, workDir, cleanups);
      settings = await baselineDb.settings();
      return runBaseline(baselineDb, profile, log, signal);
    }),
    latency: { status: "skipped" },
    throughput: { status: "skipped" },
    fanout: { status: "skipped" },
    protocol: { status: "skipped" },
    memory: { status: "skipped" },
    stalled: { status: "skipped" },
    h2load: { status: "skipped" },
    "h2load-latency": { status: "skipped" },
  };

  const context = (server: BenchServer, signal: AbortSignal): ScenarioContext => ({
    url: server.url,
    serverCpuMs: () => server.cpuMs(),
    serverLoopDelay: () => server.eventLoopDelay(),
    runId,
    profile,
    log,
    signal,
  });
  const onMain = (
    ["latency", "throughput", "fanout", "protocol", "h2load", "h2load-latency"] as const
  ).filter((n) => options.only.has(n));
  if (onMain.length > 0) {
    const cpuProfileDir = options.cpuProfile ? join(workDir, "cpu-profiles") : undefined;
    const server = await startServer(target, workDir, "main", cleanups, { cpuProfileDir });
    const p = profile;
    const onServer = <T>(
      name: ScenarioName,
      budgetMs: number,
      run: (ctx: ScenarioContext) => Promise<T>,
    ) => runScenario(name, options, budgetMs, (signal) => run(context(server, signal)));
    scenarios.latency = await onServer("latency", p.latency.budgetMs, runLatency);
    scenarios.throughput = await onServer("throughput", p.throughput.budgetMs, runThroughput);
    scenarios.fanout = await onServer("fanout", p.fanout.budgetMs, runFanout);
    scenarios.protocol = await onServer("protocol", p.protocol.budgetMs, runProtocol);
    // h2load last: its floors are processes of their own, started and stopped in the scenario.
    scenarios["h2load-latency"] = await onServer(
      "h2load-latency",
      p.h2loadLatency.budgetMs,
      runH2loadLatency,
    );
    scenarios.h2load = await onServer("h2load", p.h2load.budgetMs, runH2loadThroughput);
    await server.stop();
    if (cpuProfileDir && options.cpuProfile) {
      await keepMainThreadProfile(cpuProfileDir, server.pid, options.cpuProfile);
      log(`server CPU profile: ${options.cpuProfile}`);
    }
  }
  if (options.only.has("memory")) {
    // A server of its own: RSS seldom shrinks, so earlier scenarios would blur the delta.
    const server = await startServer(target, workDir, "memory", cleanups, { probe: true });
    scenarios.memory = await runScenario("memory", options, profile.memory.budgetMs, (signal) =>
      runMemory(context(server, signal), server),
    );
    await server.stop();
  }

  if (options.only.has("stalled")) {
    // A fresh server per variant: what one variant's streams grew must not count in the next.
    scenarios.stalled = await runScenario(
      "stalled",
      options,
      profile.stalled.budgetMs,
      async (signal) => {
        const runs: StalledRun[] = [];
        const p = profile.stalled;
        for (const variant of STALLED_VARIANTS(p.streams, p.connections)) {
          const server = await startServer(target, workDir, `stalled ${variant.label}`, cleanups, {
            probe: true,
            env: variant.env,
          });
          runs.push(await runStalled(p, server, variant, runId, log, signal));
          if (Object.keys(variant.env).length > 0) {
            // Once more on the same server, its first streams closed: what the second
            // round adds is what stalled streams hold, without what a fresh process pays
            // once (heap growth, compiled code, the allocator's first arenas).
            const again = { ...variant, label: `${variant.label}, second round` };
            runs.push(await runStalled(p, server, again, runId, log, signal));
          }
          await server.stop();
        }
        return { runs };
      },
    );
  }

  // The child runs with the server's defaults (the bench clears its variables): report them.
  const serverConfig = parseConfig([], {});
  return {
    schema: "team-protocols-bench/1",
    profile: profile.name,
    startedAt,
    elapsedMs: Math.round(performance.now() - started),
    machine,
    loadAverage1mAtEnd: loadAverage1m(),
    database: {
      kind: target.kind,
      source: target.source,
      baselineWhere: (baselineDb as BaselineDb | undefined)?.where ?? null,
      settings,
    },
    server: {
      dbPoolSize: serverConfig.dbPoolSize,
      heartbeatIntervalMs: serverConfig.heartbeatIntervalMs,
      transport:
        "gRPC on the bare HTTP/2 stream (unary and server streams; Connect and gRPC-Web through connect-node), cleartext, loopback",
    },
    targetsApplyTo: "a 2-core machine, real PostgreSQL, synchronous_commit on",
    scenarios,
    figures: buildFigures(scenarios),
  };
}

async function main(): Promise<number> {
  let options: Options;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    const e = err as { code?: string; exitCode?: number; message: string };
    if (e.code === "commander.helpDisplayed" || e.code === "commander.version") return 0;
    if (!e.code?.startsWith("commander.")) log(`error: ${e.message}`);
    return 2;
  }
  const cleanups = new Cleanups();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log(`${signal}: cleaning up`);
      void cleanups.runAll(log).finally(() => process.exit(130));
    });
  }
  try {
    const report = await runBench(options, cleanups);
    process.stdout.write(renderTable(report));
    await mkdir(dirname(options.out), { recursive: true });
    await writeFile(options.out, `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${options.out}`);
    return Object.values(report.scenarios).some((o) => o.status === "error") ? 1 : 0;
  } catch (err) {
    log(`bench failed: ${(err as Error).stack ?? String(err)}`);
    return 1;
  } finally {
    await cleanups.runAll(log);
  }
}

const code = await main();
process.exitCode = code;
// Everything was closed above; should a handle linger anyway, the run still ends.
setTimeout(() => process.exit(code), 2_000).unref();
