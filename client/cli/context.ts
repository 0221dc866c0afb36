import { readFile } from "node:fs/promises";
import { type DescMessage, type MessageShape, toJson } from "@bufbuild/protobuf";
import { createTeamClient, type TeamClient } from "@team-protocols/client/team-client.js";
import { type ClientKind, type Protocol, protocols } from "@team-protocols/client/transport.js";
import { type Command, InvalidArgumentError, Option } from "commander";

// What every client command shares: where the server is, who is calling, how to print.

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** Exit codes, the same for every command (listed in `team --help`). */
export const EXIT = { ok: 0, failed: 1, usage: 2, stillPending: 3 } as const;

/** A mistake in how the command was called, found after parsing: exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Ends the command with this exit code, its output already printed. */
export class QuietExit extends Error {
  override name = "QuietExit";
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

export interface ConnectionOptions {
  url: string;
  token?: string;
  adminToken?: string;
  protocol: Protocol;
  json: boolean;
}

/**
 * Adds the connection and output options to a command. `as` says which token it sends: a
 * member's (TEAM_TOKEN) or, for create-team, the admin token (TEAM_ADMIN_TOKEN). Prefer the
 * environment variables to the flags: flags show up in `ps`.
 */
export function connectionOptions(command: Command, as: "member" | "admin" = "member"): Command {
  command.addOption(new Option("--url <url>", "the server").env("TEAM_URL").default(DEFAULT_URL));
  if (as === "member") {
    command.addOption(
      new Option("--token <token>", "your member token (prefer TEAM_TOKEN: flags show in ps)").env(
        "TEAM_TOKEN",
      ),
    );
  } else {
    command.addOption(
      new Option("--admin-token <token>", "needed when the server sets TEAM_ADMIN_TOKEN").env(
        "TEAM_ADMIN_TOKEN",
      ),
    );
  }
  return command
    .addOption(
      new Option("--protocol <protocol>", "wire protocol")
        .choices(protocols)
        .env("TEAM_PROTOCOL")
        .default("connect"),
    )
    .option("--json", "print JSON (proto3 JSON of the response) instead of text", false);
}

/** The client a command's options describe. Member commands need a token. */
export function clientFor(
  o: ConnectionOptions,
  as: "member" | "admin" = "member",
  /** Sent as the `team-client` header (presence's last_seen_via); unset: a plain call. */
  clientKind?: ClientKind,
): TeamClient {
  const token = as === "member" ? o.token : o.adminToken;
  if (as === "member" && !token) {
    throw new UsageError("no token: set TEAM_TOKEN (or pass --token) to a member's token");
  }
  return createTeamClient({ baseUrl: o.url, token, protocol: o.protocol, clientKind });
}

/** Prints a result: text for people, or one JSON document for scripts. */
export function print(o: { json: boolean }, human: () => string, json: () => unknown): void {
  process.stdout.write(o.json ? `${JSON.stringify(json())}\n` : `${human()}\n`);
}

/** proto3 JSON with every field present (scripts need not know the defaults). */
export const asJson = <Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>) =>
  toJson(schema, message, { alwaysEmitImplicit: true });

/** A whole number option, e.g. --limit. */
export const wholeNumber = (value: string): number => {
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
};

/** A duration option: "1500ms", "90s", "5m", "2h"; a bare number is seconds. */
export const duration = (value: string): number => {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as "90s", "5m" or "1500ms"');
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms"];
  return Math.round(Number(m[1]) * unit);
};

/** Fixed-width columns for tables. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** A long text argument (a plan, a result) from a file, or from standard input for "-". */
export async function readInput(file: string): Promise<string> {
  if (file !== "-") return readFile(file, "utf8");
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
