import { spawn } from "node:child_process";
import { repoRoot } from "./child-server.js";

export interface AgentProcess {
  exited: Promise<number | null>;
  /** The JSON lines the agent printed on stdout, as objects. */
  events(): Record<string, unknown>[];
  output(): string;
  kill(): void;
}

/**
 * An agent written in another language or library, run as its own process from the repo
 * root; it reports what it did as JSON lines on stdout.
 */
export function spawnAgent(
  command: string,
  args: string[],
  env: Record<string, string>,
): AgentProcess {
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  return {
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
    events: () =>
      stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    output: () => `${stdout}\n${stderr}`,
    kill: () => child.kill("SIGKILL"),
  };
}
