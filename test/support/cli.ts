import { type ChildProcess, spawn } from "node:child_process";
import { afterEach } from "vitest";
import { repoRoot } from "./child-server.js";

/**
 * The `team` CLI as a child process (`node bin/team.js …`), as a person or a script runs it:
 * configured by TEAM_* variables (the test's own environment's are removed), judged by its
 * exit code, stdout and stderr.
 */

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  /** stdout so far. */
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

// Every run a test starts, so afterEach can kill what a failed test left running.
const running = new Set<CliProcess>();

afterEach(async () => {
  for (const run of running) {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGKILL");
    await run.done;
  }
  running.clear();
});

const CLIENT_VARIABLES = ["TEAM_URL", "TEAM_TOKEN", "TEAM_PROTOCOL", "TEAM_ADMIN_TOKEN"];
const SERVER_VARIABLES = ["HOST", "PORT", "DATABASE_URL", "DATA_DIR", "LOG_LEVEL"];

export interface SpawnOptions {
  /** Written to standard input, which is then closed. */
  stdin?: string;
  /** Outlives the test that started it (a server for the whole file); the caller stops it. */
  persistent?: boolean;
}

export function spawnTeam(
  args: string[],
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): CliProcess {
  const { stdin } = options;
  const base = { ...process.env };
  for (const name of [...CLIENT_VARIABLES, ...SERVER_VARIABLES]) delete base[name];
  const child = spawn(process.execPath, ["bin/team.js", ...args], {
    cwd: repoRoot,
    env: { ...base, ...env },
    stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  if (stdin !== undefined) child.stdin?.end(stdin);
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  const done = new Promise<CliResult>((resolve) => {
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
  const run = { child, stdout: () => stdout, stderr: () => stderr, done };
  if (!options.persistent) running.add(run);
  return run;
}

/** Runs one command to its end. */
export function runTeam(
  args: string[],
  env: Record<string, string> = {},
  stdin?: string,
): Promise<CliResult> {
  return spawnTeam(args, env, stdin === undefined ? {} : { stdin }).done;
}

/** Runs `items` through `fn`, `limit` at a time (each CLI run is a Node process). */
export async function inBatches<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += limit) {
    results.push(...(await Promise.all(items.slice(i, i + limit).map(fn))));
  }
  return results;
}

export interface ServeProcess {
  url: string;
  run: CliProcess;
  /** SIGTERM, then the exit (the server stops gracefully). */
  stop(): Promise<CliResult>;
}

/** `team serve` with these flags (add `--port 0`), up once it logs its start line. */
export async function startTeamServe(
  flags: string[],
  timeoutMs = 30_000,
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  const run = spawnTeam(["serve", ...flags], { ...env, LOG_LEVEL: "info" }, { persistent: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const start = run
      .stdout()
      .split("\n")
      .find((line) => line.includes('"event":"start"'));
    if (start) {
      const url = (JSON.parse(start) as { url: string }).url;
      return {
        url,
        run,
        async stop() {
          run.child.kill("SIGTERM");
          return run.done;
        },
      };
    }
    if (run.child.exitCode !== null || Date.now() > deadline) {
      run.child.kill("SIGKILL");
      const out = await run.done;
      throw new Error(`team serve did not start:\n${out.stdout}${out.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
