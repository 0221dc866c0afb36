import { execFile, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

/** One h2load run: where, what, and in which shape. */
export interface H2loadRun {
  /** The server, e.g. http://127.0.0.1:4000 (cleartext HTTP/2, prior knowledge: h2c). */
  url: string;
  /** The gRPC method's path, e.g. /team.v1.TeamService/Send. */
  path: string;
  /** The request body (a gRPC frame, see grpc-body.ts), sent on every request. */
  bodyFile: string;
  headers: Record<string, string>;
  /** HTTP/2 connections (h2load's clients, -c). */
  connections: number;
  /** Concurrent streams per connection (-m). */
  streams: number;
  /** Timing mode (-D): requests for this long, as fast as the server answers. */
  durationMs?: number;
  /** Count mode (-n): this many requests over all connections. */
  requests?: number;
  /** Requests per second per connection (--rps): open loop at that rate. */
  ratePerConnection?: number;
  /** Per-request log (--log-file): start time, status, duration. */
  logFile?: string;
  signal: AbortSignal;
}

/** h2load's summary of a run, and its own CPU time. */
export interface H2loadSummary {
  /** Requests per second of the measured duration, as h2load reports it. */
  requestsPerSec: number;
  /** The run's length as h2load reports it ("finished in"). */
  elapsedMs: number;
  total: number;
  /**
   * Finished with HTTP 2xx: h2load knows nothing of gRPC, so a call refused with a
   * grpc-status in its trailers counts as succeeded too. The server's own count of calls
   * by code tells the two apart (see the scenario).
   */
  succeeded: number;
  failed: number;
  errored: number;
  timeout: number;
  status2xx: number;
  /** Mean time of one request (ms), h2load's "time for request". */
  meanRequestMs: number | null;
  /** h2load's own CPU time (user + system) over the whole run, from /proc. */
  cpuMs: number | null;
}

// /proc/<pid>/stat counts CPU time in clock ticks, which are 100 per second on Linux.
const TICKS_PER_SECOND = 100;
const STAT_MARKER = "h2load-parent-stat";

/** The h2load of Debian's nghttp2-client, or H2LOAD when set. */
const h2loadBinary = () => process.env.H2LOAD ?? "h2load";

const NOT_FOUND = () =>
  new Error(`${h2loadBinary()} not found: install Debian's nghttp2-client (or set H2LOAD)`);

/** `h2load --version`, also the check that it is installed. */
export async function h2loadVersion(signal: AbortSignal): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(h2loadBinary(), ["--version"], { signal });
    return stdout.trim();
  } catch {
    throw NOT_FOUND();
  }
}

/**
 * Runs h2load to its end. It runs under a `sh` that waits for it and then prints its own
 * /proc stat line: the children's CPU time there (cutime, cstime) is exactly h2load's,
 * counted by the kernel once it exited.
 */
export async function runH2load(run: H2loadRun): Promise<H2loadSummary> {
  const args = h2loadArgs(run);
  const script = `"$0" "$@"; s=$?; echo "${STAT_MARKER} $(cat /proc/$$/stat)"; exit $s`;
  const child = spawn("sh", ["-c", script, h2loadBinary(), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    signal: run.signal,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr = (stderr + c).slice(-8_000);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (c) => resolve(c));
  });
  run.signal.throwIfAborted();
  if (code === 127) throw NOT_FOUND();
  const summary = parseSummary(stdout);
  if (code !== 0 || !summary) {
    throw new Error(
      `h2load ${args.join(" ")} exited with ${code}:\n${stdout.slice(-2_000)}\n${stderr}`,
    );
  }
  return { ...summary, cpuMs: childrenCpuMs(stdout) };
}

function h2loadArgs(run: H2loadRun): string[] {
  const args = [
    "-c",
    String(run.connections),
    "-m",
    String(run.streams),
    "-d",
    run.bodyFile,
    ...Object.entries(run.headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]),
  ];
  if (run.durationMs !== undefined) args.push("-D", `${Math.max(1, Math.round(run.durationMs))}ms`);
  if (run.requests !== undefined) args.push("-n", String(run.requests));
  if (run.ratePerConnection !== undefined) args.push("--rps", String(run.ratePerConnection));
  if (run.logFile !== undefined) args.push(`--log-file=${run.logFile}`);
  args.push(new URL(run.path, run.url).toString());
  return args;
}

const DURATION_UNITS_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };

/** h2load prints durations as e.g. 779us, 29.99ms, 3.00s. */
function durationMs(text: string | undefined): number | null {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text ?? "");
  return m ? Number(m[1]) * (DURATION_UNITS_MS[m[2] as string] as number) : null;
}

function parseSummary(out: string): Omit<H2loadSummary, "cpuMs"> | undefined {
  const finished = /^finished in (\S+), ([\d.]+) req\/s/m.exec(out);
  const requests =
    /^requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/m.exec(
      out,
    );
  const status = /^status codes: (\d+) 2xx/m.exec(out);
  if (!finished || !requests || !status) return undefined;
  const perRequest = /^time for request:\s+(\S+)\s+(\S+)\s+(\S+)/m.exec(out);
  return {
    requestsPerSec: Math.round(Number(finished[2])),
    elapsedMs: durationMs(finished[1]) ?? Number.NaN,
    total: Number(requests[1]),
    succeeded: Number(requests[2]),
    failed: Number(requests[3]),
    errored: Number(requests[4]),
    timeout: Number(requests[5]),
    status2xx: Number(status[1]),
    meanRequestMs: durationMs(perRequest?.[3]),
  };
}

function childrenCpuMs(out: string): number | null {
  const line = out.split("\n").find((l) => l.startsWith(STAT_MARKER));
  if (!line) return null;
  // Fields after the command name (which may hold spaces) start at ") ": cutime and cstime
  // are fields 16 and 17 of the line, 14th and 15th after it.
  const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[13]) + Number(fields[14]);
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : null;
}

/** One request of h2load's --log-file. */
export interface LoggedRequest {
  /** When it started, ms since the epoch (h2load logs microseconds). */
  startMs: number;
  /** HTTP status; -1 for a failed stream. */
  status: number;
  durationMs: number;
}

/** h2load's per-request log, in the order the requests started. */
export async function readH2loadLog(file: string): Promise<LoggedRequest[]> {
  const rows = (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => {
      const [start, status, duration] = l.split("\t");
      return {
        startMs: Number(start) / 1000,
        status: Number(status),
        durationMs: Number(duration) / 1000,
      };
    });
  return rows.sort((a, b) => a.startMs - b.startMs);
}
