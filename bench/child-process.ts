import { type ChildProcess, execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
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
