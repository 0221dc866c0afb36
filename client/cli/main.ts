import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConnectError } from "@connectrpc/connect";
import { TeamError } from "@team-protocols/client/team-error.js";
import { Command, CommanderError } from "commander";
import { answerCommand } from "./commands/answer.js";
import { attemptCommands } from "./commands/attempts.js";
import { historyCommands } from "./commands/history.js";
import { historyExportCommands } from "./commands/history-export.js";
import { hookCommands } from "./commands/hooks.js";
import { leaseCommands } from "./commands/leases.js";
import { mcpCommand } from "./commands/mcp.js";
import { membershipCommands } from "./commands/membership.js";
import { messagingCommands } from "./commands/messaging.js";
import { protocolCommands } from "./commands/protocols.js";
import { requestCommands } from "./commands/requests.js";
import { serveCommand } from "./commands/serve.js";
import { taskCommands } from "./commands/tasks.js";
import { upCommands } from "./commands/up.js";
import { watchCommand } from "./commands/watch.js";
import { DEFAULT_URL, EXIT, QuietExit, UsageError } from "./context.js";

/** The `team` program: every command, with --help on each. */
export function createProgram(): Command {
  const program = new Command("team")
    .version(version(), "-V, --version", "print the version of team")
    .description("Talk to a team-protocols server: members, messages, inboxes and protocols.")
    .enablePositionalOptions()
    // Errors and --help come back to runCli as exceptions, so it decides the exit code.
    .exitOverride()
    .showHelpAfterError("(add --help for usage)")
    .addHelpText(
      "after",
      `
Environment (flags override): TEAM_URL (default ${DEFAULT_URL}), TEAM_TOKEN (your member token),
TEAM_PROTOCOL (connect | grpc | grpc-web), TEAM_ADMIN_TOKEN (create-team, when the server sets it).

Output is text for people; --json prints JSON for scripts (errors as JSON on stderr).
Exit codes: ${EXIT.ok} ok, ${EXIT.failed} refused or failed (a refusal prints its rule id and sentence),
${EXIT.usage} usage error, ${EXIT.stillPending} await: still pending when the timeout passed.`,
    );
  serveCommand(program);
  membershipCommands(program);
  historyExportCommands(program);
  messagingCommands(program);
  protocolCommands(program);
  answerCommand(program);
  taskCommands(program);
  requestCommands(program);
  attemptCommands(program);
  historyCommands(program);
  leaseCommands(program);
  watchCommand(program);
  mcpCommand(program);
  hookCommands(program);
  upCommands(program);
  return program;
}

/** This package's version (package.json beside this file). */
function version(): string {
  const file = new URL("./package.json", import.meta.url);
  return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
}

/** Runs one command line; resolves to the process exit code. Never calls process.exit. */
export async function runCli(argv: string[]): Promise<number> {
  const code = await runCommand(argv);
  // Exit code 2 from a Claude Code hook means "block" (a Stop hook would hold the agent on
  // a usage mistake): `team hook` fails open instead, with exit code 1.
  return argv[0] === "hook" && code === EXIT.usage ? EXIT.failed : code;
}

async function runCommand(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  try {
    await createProgram().parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has printed the help or the error already.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof QuietExit) return err.exitCode;
    if (err instanceof UsageError) {
      process.stderr.write(`team: ${err.message}\n`);
      return EXIT.usage;
    }
    reportFailure(err, json);
    return EXIT.failed;
  }
}

/** A refusal names its rule and sentence; anything else its code and message. */
function reportFailure(err: unknown, json: boolean): void {
  if (!(err instanceof ConnectError)) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${json ? JSON.stringify({ error: { message } }) : `team: ${message}`}\n`);
    return;
  }
  const e = TeamError.fromError(err);
  if (json) {
    const v = e.violation;
    const error = {
      code: e.codeName,
      message: e.rawMessage,
      ...(v ? { rule: v.rule, sentence: v.sentence, field: v.field } : {}),
    };
    process.stderr.write(`${JSON.stringify({ error })}\n`);
    return;
  }
  const line = e.violation
    ? `refused by rule ${e.violation.rule} (${e.codeName}): ${e.violation.sentence}`
    : `${e.codeName}: ${e.rawMessage}${hintFor(e.rawMessage)}`;
  process.stderr.write(`team: ${line}\n`);
}

/** Nothing listens where TEAM_URL points: the usual first mistake, so name the likely cause. */
function hintFor(message: string): string {
  return /ECONNREFUSED/.test(message) ? " (is the server running? check TEAM_URL or --url)" : "";
}

const isEntryPoint =
  process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isEntryPoint) process.exitCode = await runCli(process.argv.slice(2));
