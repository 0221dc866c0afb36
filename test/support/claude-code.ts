import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, symlink } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "./child-server.js";

/**
 * The real Claude Code (the pinned npm package, installed by scripts/install-claude-code.sh
 * into a cache folder), run headless against a scripted Messages API on loopback, in a
 * throwaway HOME and project folder, with `team` on its PATH as `npm link` would put it.
 */

export const CLAUDE_CODE_VERSION = "2.1.328";
const cache =
  process.env.CLAUDE_CODE_CACHE ?? join(homedir(), ".cache", "team-protocols", "claude-code");

/** The native binary the package ships for this platform. */
export function claudeBinary(): string {
  const platform = `${process.platform}-${process.arch}`;
  const bin = join(cache, "node_modules", "@anthropic-ai", `claude-code-${platform}`, "claude");
  if (!existsSync(bin)) {
    throw new Error(
      `Claude Code ${CLAUDE_CODE_VERSION} is not installed at ${bin}: run scripts/install-claude-code.sh (npm run test:agents does)`,
    );
  }
  return bin;
}

export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** `--output-format json`'s result, when it printed one. */
  result?: { result?: string; is_error?: boolean; num_turns?: number; [k: string]: unknown };
}

export interface ClaudeProject {
  /** The project folder Claude Code runs in. */
  dir: string;
  home: string;
  /** Environment of every claude run (add TEAM_URL / TEAM_TOKEN for the hooks). */
  env: Record<string, string>;
  /** `claude <args>` (e.g. the docs' `claude mcp add ...`), to its end. */
  claude(
    args: string[],
    options?: { timeoutMs?: number; env?: Record<string, string> },
  ): Promise<ClaudeRun>;
  /** `claude -p <prompt> --output-format json <args>`. */
  ask(
    prompt: string,
    args?: string[],
    options?: { timeoutMs?: number; env?: Record<string, string> },
  ): Promise<ClaudeRun>;
  /** `team <args>` as the user runs it beside Claude Code (e.g. `team hooks install`). */
  team(args: string[]): Promise<ClaudeRun>;
  settings(): Promise<unknown>;
}

export async function claudeProject(anthropicUrl: string): Promise<ClaudeProject> {
  const root = await mkdtemp(join(tmpdir(), "claude-code-"));
  const home = join(root, "home");
  const dir = join(root, "project");
  const bin = join(root, "bin");
  await Promise.all([mkdir(home), mkdir(dir), mkdir(bin)]);
  // What `npm link` does in the clone: `team` on the PATH, a link to bin/team.js.
  await symlink(join(repoRoot, "bin", "team.js"), join(bin, "team"));
  const env: Record<string, string> = {
    PATH: `${bin}:${process.env.PATH ?? ""}`,
    HOME: home,
    ANTHROPIC_BASE_URL: anthropicUrl,
    ANTHROPIC_API_KEY: "anything",
    DISABLE_TELEMETRY: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    // MCP tools offered to the model directly, not behind the ToolSearch tool.
    ENABLE_TOOL_SEARCH: "false",
  };
  const run = (
    command: string,
    args: string[],
    options: { timeoutMs?: number; env?: Record<string, string> } = {},
  ) =>
    new Promise<ClaudeRun>((resolve) => {
      const child = spawn(command, args, {
        cwd: dir,
        env: { ...env, ...options.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (s: string) => {
        stdout += s;
      });
      child.stderr.setEncoding("utf8").on("data", (s: string) => {
        stderr += s;
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
      child.once("close", (code) => {
        clearTimeout(timer);
        let result: ClaudeRun["result"];
        try {
          result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as ClaudeRun["result"];
        } catch {
          result = undefined;
        }
        resolve({ code, stdout, stderr, ...(result ? { result } : {}) });
      });
    });
  return {
    dir,
    home,
    env,
    claude: (args, options) => run(claudeBinary(), args, options),
    ask: (prompt, args = [], options) =>
      run(claudeBinary(), ["-p", prompt, "--output-format", "json", ...args], options),
    team: (args) => run(join(bin, "team"), args),
    settings: async () => JSON.parse(await readFile(join(dir, ".claude", "settings.json"), "utf8")),
  };
}
