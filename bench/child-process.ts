import { type ChildProcess, execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { promisify } from "node:util";

/** What the bench needs of a child process it started: its CPU and memory, and a clean stop. */

const STOP_TIMEOUT_MS = 20_000;

/** SIGTERM, then SIGKILL if it has not exited in time. */
export async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), STOP_TIMEOUT_MS);
  });
  const result = await Promise.race([exited.then(() => "exited" as const), late]);
  clearTimeout(timer);
  if (result === "late") {
    child.kill("SIGKILL");
    await exited;
  }
}

/** RSS from /proc (Linux); elsewhere from ps, which reports KiB. */
export async function rssOf(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    if (kib) return Number(kib) * 1024;
  } catch {
    // not Linux: fall through to ps
  }
  const { stdout } = await promisify(execFile)("ps", ["-o", "rss=", "-p", String(pid)]);
  return Number(stdout.trim()) * 1024;
}

// /proc/<pid>/stat counts CPU time in clock ticks, which are 100 per second on Linux.
const TICKS_PER_SECOND = 100;

export async function cpuOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at ") ".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
    return (ticks * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system) of each PostgreSQL process on this machine so far (its backends,
 * WAL writer, checkpointer and the rest, found by their command name in /proc), by pid.
 * Undefined off Linux. See postgresCpuBetween.
 */
export async function postgresCpu(): Promise<Map<string, number> | undefined> {
  let names: string[];
  try {
    names = await readdir("/proc");
  } catch {
    return undefined;
  }
  const byPid = new Map<string, number>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== "postgres") continue;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      byPid.set(name, ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND);
    } catch {
      // the process exited meanwhile
    }
  }
  return byPid;
}

/**
 * The PostgreSQL CPU time used between two readings: what each process present at the end
 * used since the first reading (all of it for one started meanwhile). A process that exited
 * in between (an autovacuum worker, say) takes its time with it; the pool's connections, which
 * do the work measured, stay open.
 */
export function postgresCpuBetween(
  before: Map<string, number> | undefined,
  after: Map<string, number> | undefined,
): number | null {
  if (!before || !after) return null;
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}
