import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { createTeamClient } from "@team-protocols/client/team-client.js";
import { type Command, Option } from "commander";
import {
  type ConnectionOptions,
  connectionOptions,
  QuietExit,
  UsageError,
  wholeNumber,
} from "../context.js";
import { type HookEventName, hookEventNames } from "../hooks/hook-events.js";
import { mergeTeamHooks, teamHooks } from "../hooks/hooks-settings.js";
import { runHook } from "../hooks/run-hook.js";
import { thisTeam } from "../this-team.js";

interface HookOptions extends ConnectionOptions {
  maxBlocks: number;
  timeoutMs: number;
}

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
      ),
  ).action(async (event: string, o: HookOptions) => {
    if (!(hookEventNames as string[]).includes(event)) {
      throw new UsageError(
        `unknown hook event "${event}": use one of ${hookEventNames.join(", ")}`,
      );
    }
    const stdin = await readAll(process.stdin);
    if (!o.token) {
      process.stderr.write(`team hook ${event}: not applied, TEAM_TOKEN is not set\n`);
      throw new QuietExit(1);
    }
    const code = await runHook({
      event: event as HookEventName,
      client: createTeamClient({
        baseUrl: o.url,
        token: o.token,
        protocol: o.protocol,
        timeoutMs: o.timeoutMs,
      }),
      stdin,
      write: (text) =>
        new Promise((done, fail) => process.stdout.write(text, (e) => (e ? fail(e) : done()))),
      warn: (line) => process.stderr.write(`${line}\n`),
      maxBlocks: o.maxBlocks,
      deadlineMs: o.timeoutMs,
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
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  if ((stream as { isTTY?: boolean }).isTTY) return "";
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
