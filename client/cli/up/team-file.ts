import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { permissionModeNames } from "@team-protocols/client/names.js";
import { isMap, isSeq, LineCounter, parseDocument } from "yaml";
import { z } from "zod";

/**
 * The `team up` file (YAML, or JSON, which is YAML too): the team, its lead and its members.
 * docs/team-up.md describes it; every mistake is one sentence naming the line and the field.
 */

const name = z
  .string()
  .min(1)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '_' and '-' only");

/** A command template: a list (no shell) or one string (run by /bin/sh, values quoted). */
const command = z.union([z.string().min(1), z.array(z.string()).min(1)]);

const runtime = z.union([z.literal("claude-code"), z.strictObject({ command })]);

const member = z
  .strictObject({
    name,
    role: z.enum(["teammate", "observer"]).default("teammate"),
    permission_mode: z.enum(permissionModeNames).optional(),
    prompt: z.string().optional(),
    prompt_file: z.string().optional(),
    cwd: z.string().optional(),
    runtime: runtime.optional(),
    env: z.record(z.string(), z.string()).optional(),
  })
  .refine((m) => !(m.prompt !== undefined && m.prompt_file !== undefined), {
    message: "give prompt or prompt_file, not both",
    path: ["prompt_file"],
  });

export const teamFileSchema = z.strictObject({
  team: name,
  url: z.string().url().optional(),
  lead: z
    .strictObject({
      name: name.optional(),
      permission_mode: z.enum(permissionModeNames).optional(),
      token_file: z.string().optional(),
    })
    .optional(),
  members: z.array(member).min(1),
});

export type TeamFileData = z.infer<typeof teamFileSchema>;
export type MemberEntry = TeamFileData["members"][number];

export interface TeamFile extends TeamFileData {
  /** The file's absolute path; relative paths in it are read from its folder. */
  path: string;
  dir: string;
}

/** A mistake in the team file: `FILE:LINE: field: what is wrong`. */
export class TeamFileError extends Error {
  override name = "TeamFileError";
}

export async function readTeamFile(path: string): Promise<TeamFile> {
  const abs = resolve(path);
  const text = await readFile(abs, "utf8").catch((err: NodeJS.ErrnoException) => {
    throw new TeamFileError(`${path}: cannot read the team file (${err.code ?? err.message})`);
  });
  return { ...parseTeamFile(text, abs), path: abs, dir: dirname(abs) };
}

/** Parses and validates; `file` names the source in errors. */
export function parseTeamFile(text: string, file: string): TeamFileData {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const [syntax] = doc.errors;
  if (syntax) {
    const line = syntax.linePos?.[0]?.line ?? lines.linePos(syntax.pos[0]).line;
    throw new TeamFileError(`${file}:${line}: ${syntax.message.split("\n")[0]}`);
  }
  const result = teamFileSchema.safeParse(doc.toJS());
  if (result.success) {
    for (const [i, m] of result.data.members.entries()) {
      if (result.data.members.findIndex((o) => o.name === m.name) !== i)
        throw new TeamFileError(
          `${file}:${lineOf(doc, lines, ["members", i, "name"])}: members[${i}].name: "${m.name}" appears twice`,
        );
    }
    return result.data;
  }
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const path = issue.path as (string | number)[];
  // An unknown field's line is its own key's, not its parent's.
  const at = issue.code === "unrecognized_keys" ? [...path, issue.keys[0] ?? ""] : path;
  return fail(file, lineOf(doc, lines, at), fieldName(path), describe(issue));
}

function fail(file: string, line: number, field: string, what: string): never {
  throw new TeamFileError(`${file}:${line}: ${field ? `${field}: ` : ""}${what}`);
}

/** `members[1].runtime` */
function fieldName(path: (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${p}` : p)).join("");
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") return `unknown field ${issue.keys.join(", ")}`;
  if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
  if (issue.code === "invalid_value")
    return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
  if (issue.code === "invalid_union")
    return `must be "claude-code" or { command: [ ... ] } (a list, or one string run by the shell)`;
  return issue.message;
}

/** The line of the deepest node along `path` that exists (1-based). */
function lineOf(
  doc: ReturnType<typeof parseDocument>,
  lines: LineCounter,
  path: (string | number)[],
): number {
  let node: unknown = doc.contents;
  let offset = (node as { range?: [number] } | null)?.range?.[0] ?? 0;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === key);
      if (!pair) break;
      offset = (pair.key as { range?: [number] }).range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof key === "number") {
      node = node.items[key];
      if (!node) break;
      offset = (node as { range?: [number] }).range?.[0] ?? offset;
    } else break;
  }
  return lines.linePos(offset).line;
}
