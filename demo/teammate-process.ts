import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { TeammateLine, Transcript } from "./transcript.js";

export interface TeammateProcess {
  name: string;
  child: ChildProcess;
  /** The exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

const repoRoot = fileURLToPath(new URL("..", import.meta.url));

/** Starts demo/teammate.ts as its own process; its lines go to the transcript as `name`. */
export function startTeammate(options: {
  name: string;
  role: "planner" | "tester" | "racer" | "mcp";
  url: string;
  token: string;
  transcript: Transcript;
}): TeammateProcess {
  const { name, transcript } = options;
  const child = spawn(
    process.execPath,
    // The MCP teammate is its own script: it only talks through `team mcp`.
    ["--import", "tsx", options.role === "mcp" ? "demo/mcp-teammate.ts" : "demo/teammate.ts"],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        TEAM_URL: options.url,
        TEAM_TOKEN: options.token,
        DEMO_ROLE: options.role,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  transcript.state(`${name} started (pid ${child.pid})`);
  createInterface({ input: child.stdout }).on("line", (raw) => {
    try {
      const line = JSON.parse(raw) as TeammateLine;
      transcript.line(name, line.text, line.at);
    } catch {
      transcript.line(name, raw);
    }
  });
  createInterface({ input: child.stderr }).on("line", (raw) => transcript.line(`${name}!`, raw));
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => {
      transcript.state(`${name} exited with code ${code ?? child.signalCode}`);
      resolve(code);
    });
    child.once("error", (err) => {
      transcript.line(`${name}!`, err.message);
      resolve(null);
    });
  });
  return { name, child, exited };
}

/** Kills a teammate that is still running (the demo failed or timed out). */
export async function stopTeammate(teammate: TeammateProcess): Promise<void> {
  const { child } = teammate;
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await teammate.exited;
}
