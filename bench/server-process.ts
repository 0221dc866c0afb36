import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { buildServer } from "../scripts/build-server.js";
import { configEnvNames } from "../server/config.js";
import { cpuOf, rssOf, stopChild } from "./child-process.js";
import type { LoopDelay } from "./loop-delay.js";

const repoRoot = fileURLToPath(new URL("..", import.meta.url));
// An embedded database is made by initdb at start, which took over 30 s on a loaded machine.
const START_TIMEOUT_MS = 120_000;

// The server reads these; the bench sets them itself so the caller's shell cannot skew a run.
const SERVER_ENV = configEnvNames();

/**
 * The server as `npm start` runs it (compiled by scripts/build-server.ts), and the probe
 * beside it, built once per bench process into a folder of their own under .tmp/ (inside the
 * project, so that the compiled files find node_modules), removed when the process exits.
 */
let built: Promise<{ main: string; probe: string }> | undefined;
export function serverBuild(): Promise<{ main: string; probe: string }> {
  built ??= (async () => {
    await mkdir(join(repoRoot, ".tmp"), { recursive: true });
    const dir = await mkdtemp(join(repoRoot, ".tmp", "bench-server-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    await buildServer(join(dir, "dist"));
    const probe = join(dir, "server-probe.js");
    await build({
      entryPoints: [join(repoRoot, "bench", "server-probe.ts")],
      outfile: probe,
      bundle: true,
      format: "esm",
      platform: "node",
      logLevel: "warning",
    });
    return { main: join(dir, "dist", "server", "main.js"), probe };
  })();
  return built;
}

/** The real server, as `npm start` runs it, as a child process: its own event loop and heap. */
export interface BenchServer {
  readonly url: string;
  readonly pid: number;
  /** Resident set size of the server process now. */
  rssBytes(): Promise<number>;
  /** CPU time (user + system) the server process has used so far; undefined off Linux. */
  cpuMs(): Promise<number | undefined>;
  /** After a full GC, process.memoryUsage() in the server (needs `probe`, see server-probe.ts). */
  memoryAfterGc(): Promise<NodeJS.MemoryUsage>;
  /** The server's event-loop delay since the previous call (resets it). */
  eventLoopDelay(): Promise<LoopDelay>;
  /** process.memoryUsage() in the server now (no GC) and eventLoopDelay()'s answer. */
  probeReport(): Promise<ProbeReport>;
  /** SIGTERM, then SIGKILL if it has not exited in time. */
  stop(): Promise<void>;
}

/**
 * Starts the server on a port of its own choosing (PORT=0) and learns the URL from its
 * start log line, so there is no window in which another process can take the port.
 */
export async function startBenchServer(
  env: Record<string, string>,
  options: { probe?: boolean; cpuProfileDir?: string | undefined } = {},
): Promise<BenchServer> {
  const base = { ...process.env };
  for (const name of SERVER_ENV) delete base[name];
  // The young generation is pinned at its largest size (16 MiB per semi-space, V8's default
  // maximum on 64-bit): V8 grows it during a burst of allocation (opening streams) and
  // shrinks it when idle, which moved RSS by ~40 MB between readings, as much as 1,000
  // streams weigh. Pinned, it is the same in every reading and cancels out of the deltas;
  // the server can reach that size anyway, so nothing is hidden.
  // Every server gets the probe (event-loop delay); only the memory server collects garbage
  // on demand.
  const { main, probe: probeFile } = await serverBuild();
  const probe = options.probe
    ? ["--expose-gc", "--min-semi-space-size=16", "--max-semi-space-size=16", "--import", probeFile]
    : ["--import", probeFile];
  // V8's sampling profiler, written when the server exits (it exits cleanly on SIGTERM): one
  // file per thread, CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile.
  const profile = options.cpuProfileDir
    ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDir}`]
    : [];
  // As `npm start` runs it: compiled, with source maps for stack traces.
  const args = ["--enable-source-maps", ...probe, ...profile, main];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    // No send-rate limit: the bench measures how fast the server goes, not the limit. The
    // inbox backlog limit stays on (its check is part of every send's cost) but out of reach:
    // nobody acks, and a full run stores far more than 10,000 messages in the lead's inbox.
    env: {
      ...base,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "info",
      SEND_RATE_PER_SEC: "0",
      CREATE_TEAM_RATE_PER_MIN: "0",
      MAX_TEAMS: "0",
      MAX_INBOX_BACKLOG: "1000000000",
      MAX_INBOX_BACKLOG_BYTES: "1000000000000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail("no start line"), START_TIMEOUT_MS);
    function fail(why: string) {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`server did not start (${why}); output:\n${output.slice(-4000)}`));
    }
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      const start = /"event":"start".*?"url":"([^"]+)"/.exec(output);
      if (start?.[1]) {
        clearTimeout(timer);
        resolve(start[1]);
      }
    });
    void exited.then(() => fail(`exited with ${child.exitCode ?? child.signalCode}`));
  });
  // Keep only a tail of the log: an error at stop is worth showing, a long run's log is not.
  // Whole lines are scanned for the probe's answers.
  const probeWaiters: ((usage: ProbeReport) => void)[] = [];
  let partial = "";
  child.stdout?.on("data", (chunk: string) => {
    if (output.length > 64_000) output = output.slice(-16_000);
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (line.includes('"event":"bench_memory"')) probeWaiters.shift()?.(JSON.parse(line));
    }
  });
  const pid = child.pid as number;
  let stopping: Promise<void> | undefined;
  return {
    url,
    pid,
    rssBytes: () => rssOf(pid),
    cpuMs: () => cpuOf(pid),
    memoryAfterGc() {
      if (!options.probe) return Promise.reject(new Error("server started without the probe"));
      return askProbe();
    },
    async eventLoopDelay() {
      return (await askProbe()).eventLoopDelay;
    },
    probeReport: () => askProbe(),
    stop() {
      stopping ??= stopChild(child, exited);
      return stopping;
    },
  };

  function askProbe(): Promise<ProbeReport> {
    const answer = new Promise<ProbeReport>((resolve, reject) => {
      const waiter = (usage: ProbeReport) => {
        clearTimeout(timer);
        resolve(usage);
      };
      const timer = setTimeout(() => {
        probeWaiters.splice(probeWaiters.indexOf(waiter), 1);
        reject(new Error("no answer from the probe"));
      }, 10_000);
      probeWaiters.push(waiter);
    });
    child.kill("SIGUSR2");
    return answer;
  }
}

/** What server-probe.ts answers. */
export interface ProbeReport extends NodeJS.MemoryUsage {
  /** The server's event-loop delay since the previous report. */
  eventLoopDelay: LoopDelay;
}
