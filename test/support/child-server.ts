import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect } from "vitest";
import { configEnvNames } from "../../server/config.js";
import { withTimeout } from "./timeout.js";
import { waitFor as poll, sleep } from "./wait.js";

export { withTimeout } from "./timeout.js";

/**
 * The real server as a child process (`node --import tsx server/main.ts`), configured by
 * environment variables as in production, observed through its pino JSON log lines.
 */

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
// A deadline to wait for an event, not a figure: an embedded server starting on a fresh folder
// takes about 6 s here, and several times that while other suites load the machine.
export const START_TIMEOUT_MS = 60_000;
export const EXIT_TIMEOUT_MS = 15_000;

export interface LogLine {
  event?: string;
  level?: number;
  msg?: string;
  [key: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  child: ChildProcess;
  /** Resolves with the exit code and signal once the process has exited. */
  exited: Promise<Exit>;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  /** The stdout lines that are JSON (pino's). */
  logs(): LogLine[];
  /** The log lines of one event. */
  events(event: string): LogLine[];
}

// Everything a test starts, so afterEach can clean up even when the test failed midway.
const children = new Set<ServerProcess>();
const tempDirs = new Set<string>();
const cleanups: (() => Promise<void>)[] = [];

/** Registers a cleanup to run after the current test (after its servers are killed). */
export function afterThisTest(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

// Importing this module makes every test of the file clean up its child servers and folders.
afterEach(async () => {
  for (const server of children) {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill("SIGKILL");
    }
    await server.exited;
  }
  children.clear();
  for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => {});
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
  tempDirs.clear();
});

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A fresh folder under the OS temp dir; `<it>/data` is the data dir (its lock is a sibling). */
export async function tempDataDir(): Promise<string> {
  const root = await mkdtemp(join(os.tmpdir(), "tp-server-process-"));
  tempDirs.add(root);
  return join(root, "data");
}

/** Spawns the server with a clean configuration environment plus `env`. */
export function spawnServer(env: Record<string, string>): ServerProcess {
  const base = { ...process.env };
  for (const name of configEnvNames()) {
    delete base[name];
  }
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    cwd: repoRoot,
    // Suites make teams by the dozen from one address (open CreateTeam's rate: off).
    env: { ...base, LOG_LEVEL: "info", CREATE_TEAM_RATE_PER_MIN: "0", MAX_TEAMS: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let stdout = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    // "close", not "exit": it comes after stdout is drained, so the last log lines
    // (the stop event) have been read by the time a test looks at them.
    child.once("close", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  const logs = () =>
    stdout.split("\n").flatMap((line) => {
      if (!line.startsWith("{")) return [];
      try {
        return [JSON.parse(line) as LogLine];
      } catch {
        return []; // a line still being written
      }
    });
  const server: ServerProcess = {
    child,
    exited,
    output: () => output,
    logs,
    events: (event) => logs().filter((l) => l.event === event),
  };
  children.add(server);
  return server;
}

/**
 * Polls until `check` returns a value (support/wait.ts's waitFor), or fails with `what`
 * after `timeoutMs` and, when given, the server's output: why a child did not get there.
 */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => T | undefined,
  server?: ServerProcess,
): Promise<T> {
  try {
    // Only undefined means "not yet" here: null and false are answers (the child exited).
    const boxed = await poll(
      what,
      () => {
        const value = check();
        return value === undefined ? undefined : { value };
      },
      { timeoutMs, intervalMs: 25 },
    );
    return boxed.value;
  } catch (err) {
    if (!server) throw err;
    throw new Error(`${(err as Error).message}; output:\n${server.output()}`);
  }
}

/**
 * Starts a server on a free port and waits for its start line. The port is free when
 * picked but could be taken before the child listens: then it is tried again on another.
 */
export async function startServer(
  env: Record<string, string>,
): Promise<ServerProcess & { url: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const server = spawnServer({ PORT: String(port), ...env });
    let exit: Exit | undefined;
    void server.exited.then((e) => {
      exit = e;
    });
    const start = await waitFor(
      "the start line",
      START_TIMEOUT_MS,
      () => (exit ? null : server.events("start")[0]),
      server,
    );
    if (start === null) {
      if (attempt < 3 && server.output().includes("EADDRINUSE")) continue;
      throw new Error(
        `server exited (code ${exit?.code}, signal ${exit?.signal}) before starting; ` +
          `output:\n${server.output()}`,
      );
    }
    expect(start.url).toBe(`http://127.0.0.1:${port}`);
    return { ...server, url: start.url as string };
  }
}

/** Waits for the process to exit, failing the test after `timeoutMs`. */
export async function exitOf(server: ServerProcess, timeoutMs = EXIT_TIMEOUT_MS): Promise<Exit> {
  return withTimeout(`the server process to exit`, timeoutMs, server.exited, server);
}

export async function stopServer(server: ServerProcess, signal: NodeJS.Signals = "SIGTERM") {
  server.child.kill(signal);
  return exitOf(server);
}

/**
 * Starts the server on `port` and waits for its start line. After a SIGKILL the embedded
 * database's folder lock is left behind until it goes stale (proper-lockfile: 15 s), so a
 * start refused for the lock is tried again.
 */
export async function startServerOn(
  port: number,
  env: Record<string, string>,
): Promise<ServerProcess> {
  const deadline = Date.now() + 40_000;
  for (;;) {
    const server = spawnServer({ PORT: String(port), ...env });
    let exit: Exit | undefined;
    void server.exited.then((e) => {
      exit = e;
    });
    const started = await waitFor(
      "the start line",
      40_000,
      () => (exit ? false : server.events("start").length > 0 ? true : undefined),
      server,
    );
    if (started) return server;
    const retry = /in use by another team-protocols process|EADDRINUSE/.test(server.output());
    if (!retry || Date.now() > deadline) {
      throw new Error(`the server did not start again:\n${server.output()}`);
    }
    await sleep(500);
  }
}
