import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { createTeamClient, type TeamClient } from "@team-protocols/client/team-client.js";
import { type Command, Option } from "commander";
import {
  type ConnectionOptions,
  connectionOptions,
  QuietExit,
  UsageError,
  wholeNumber,
} from "../context.js";
import { ForeignHookError, installGitHook, preCommitRefusals } from "../hooks/git-pre-commit.js";
import {
  type HookEvent,
  type HookEventName,
  hookEventNames,
  hookEvents,
} from "../hooks/hook-events.js";
import { parseHookInput } from "../hooks/hook-input.js";
import { mergeTeamHooks, teamHooks } from "../hooks/hooks-settings.js";
import { runHook } from "../hooks/run-hook.js";
import { thisTeam } from "../this-team.js";

interface HookOptions extends ConnectionOptions {
  maxBlocks: number;
  timeoutMs: number;
  failClosed?: boolean;
}

/**
 * --fail-closed, or TEAM_LEASE_FAIL_CLOSED=1 (true, yes): the lease hooks refuse an edit or
 * a commit they could not check (the server unreachable); by default they let it through.
 */
const failClosedOption = () =>
  new Option(
    "--fail-closed",
    "lease checks: refuse what cannot be checked when the server is unreachable (env TEAM_LEASE_FAIL_CLOSED=1)",
  );
const failClosed = (o: { failClosed?: boolean }) =>
  o.failClosed === true || /^(1|true|yes)$/i.test(process.env.TEAM_LEASE_FAIL_CLOSED?.trim() ?? "");

const hookClient = (o: ConnectionOptions & { timeoutMs: number; token: string }): TeamClient =>
  createTeamClient({
    baseUrl: o.url,
    token: o.token,
    protocol: o.protocol,
    timeoutMs: o.timeoutMs,
    // Presence: the member was seen through a hook (its runtime is working).
    clientKind: "hook",
  });

/** `team hook <event>` (what Claude Code runs) and `team hooks install|print`. */
export function hookCommands(program: Command): void {
  connectionOptions(
    program
      .command("hook")
      .argument("<event>", hookEventNames.join(" | "))
      .description(
        "answer one Claude Code hook: reads its JSON on stdin, prints Claude Code's answer (fails open)",
      )
      .addOption(
        new Option("--max-blocks <n>", "stop: at most this many blocks in a row")
          .env("TEAM_HOOK_MAX_BLOCKS")
          .argParser(wholeNumber)
          .default(3),
      )
      .addOption(
        new Option("--timeout-ms <ms>", "give up (and fail open) after this long")
          .env("TEAM_HOOK_TIMEOUT_MS")
          .argParser(wholeNumber)
          .default(10_000),
      )
      .addOption(failClosedOption()),
  ).action(async (event: string, o: HookOptions) => {
    if (!(hookEventNames as string[]).includes(event)) {
      throw new UsageError(
        `unknown hook event "${event}": use one of ${hookEventNames.join(", ")}`,
      );
    }
    const stdin = await readAll(process.stdin);
    if (!o.token) {
      // Failing closed, an edit the lease check cannot make without a token is denied too.
      const hookEvent: HookEvent = hookEvents[event as HookEventName];
      const closed = failClosed(o)
        ? hookEvent.unreachable?.(parseHookInput(stdin), "TEAM_TOKEN is not set")
        : undefined;
      if (closed) {
        process.stderr.write(`team hook ${event}: failed closed, TEAM_TOKEN is not set\n`);
        process.stdout.write(`${JSON.stringify(closed)}\n`);
        return;
      }
      process.stderr.write(`team hook ${event}: not applied, TEAM_TOKEN is not set\n`);
      throw new QuietExit(1);
    }
    const code = await runHook({
      event: event as HookEventName,
      client: hookClient({ ...o, token: o.token }),
      stdin,
      write: (text) =>
        new Promise((done, fail) => process.stdout.write(text, (e) => (e ? fail(e) : done()))),
      warn: (line) => process.stderr.write(`${line}\n`),
      maxBlocks: o.maxBlocks,
      deadlineMs: o.timeoutMs,
      failClosed: failClosed(o),
    });
    if (code !== 0) throw new QuietExit(code);
  });

  const hooks = program
    .command("hooks")
    .description("the `team hook` commands as Claude Code's settings.json hooks");
  hooks
    .command("print")
    .description("print the hooks block (JSON) for .claude/settings.json")
    .option("--command <cmd>", "how hooks start team (default: this CLI, by absolute path)")
    .action((o: { command?: string }) => {
      process.stdout.write(
        `${JSON.stringify({ hooks: teamHooks(o.command ?? thisTeam()) }, null, 2)}\n`,
      );
    });
  hooks
    .command("install")
    .description(
      "merge the hooks into DIR/.claude/settings.json, keeping everything else in it (run claude with TEAM_URL and TEAM_TOKEN set)",
    )
    .option("--dir <dir>", "the project folder", ".")
    .option("--file <name>", "settings file under .claude/", "settings.json")
    .option("--command <cmd>", "how hooks start team (default: this CLI, by absolute path)")
    .action(async (o: { dir: string; file: string; command?: string }) => {
      const file = join(resolve(o.dir), ".claude", o.file);
      const current = await readFile(file, "utf8").then(
        (text) => {
          try {
            return JSON.parse(text) as unknown;
          } catch {
            throw new UsageError(`${file} is not JSON: fix it or move it away first`);
          }
        },
        () => undefined,
      );
      const merged = mergeTeamHooks(current, o.command ?? thisTeam());
      await mkdir(dirname(file), { recursive: true });
      // Written whole, then renamed: a reader never sees half a settings file.
      await writeFile(`${file}.tmp`, `${JSON.stringify(merged, null, 2)}\n`);
      await rename(`${file}.tmp`, file);
      process.stdout.write(`hooks installed in ${file}\n`);
    });

  hooks
    .command("install-git")
    .description(
      "write a git pre-commit hook that refuses a commit touching another member's exclusive lease (commit with TEAM_URL and TEAM_TOKEN set)",
    )
    .option("--dir <dir>", "a folder of the repository", ".")
    .option("--command <cmd>", "how the hook starts team (default: this CLI, by absolute path)")
    .action(async (o: { dir: string; command?: string }) => {
      try {
        const file = await installGitHook(resolve(o.dir), o.command ?? thisTeam());
        process.stdout.write(`git pre-commit hook installed in ${file}\n`);
      } catch (err) {
        if (err instanceof ForeignHookError) throw new UsageError(err.message);
        throw err;
      }
    });

  connectionOptions(
    hooks
      .command("pre-commit")
      .description(
        "what the git hook runs: exit 1 (refuse) when the staged changes touch another member's exclusive lease",
      )
      .option("--dir <dir>", "a folder of the repository", ".")
      .addOption(
        new Option("--timeout-ms <ms>", "give up (fail open, or closed) after this long")
          .env("TEAM_HOOK_TIMEOUT_MS")
          .argParser(wholeNumber)
          .default(10_000),
      )
      .addOption(failClosedOption()),
  ).action(
    async (o: ConnectionOptions & { dir: string; timeoutMs: number; failClosed?: boolean }) => {
      const closed = failClosed(o);
      const unchecked = (why: string) => {
        process.stderr.write(
          closed
            ? `team: commit refused: the leases could not be checked (${why}) and TEAM_LEASE_FAIL_CLOSED is set\n`
            : `team hooks pre-commit: leases not checked: ${why}\n`,
        );
        if (closed) throw new QuietExit(1);
      };
      if (!o.token) return unchecked("TEAM_TOKEN is not set");
      let refusals: string[];
      try {
        refusals = await preCommitRefusals(hookClient({ ...o, token: o.token }), resolve(o.dir));
      } catch (err) {
        return unchecked((err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "");
      }
      if (refusals.length === 0) return;
      for (const line of refusals) process.stderr.write(`team: commit refused: ${line}\n`);
      process.stderr.write(
        "Unstage those files (git restore --staged <path>), or get the lease first (team lease acquire).\n",
      );
      throw new QuietExit(1);
    },
  );
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  if ((stream as { isTTY?: boolean }).isTTY) return "";
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
