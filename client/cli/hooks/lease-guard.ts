import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { instant } from "@team-protocols/client/describe.js";
import { leaseModeName } from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { Lease } from "@team-protocols/contract/team/v1/records_pb.js";

/**
 * The check both lease hooks make (Claude Code's PreToolUse, git's pre-commit): which of
 * these repository paths fall under another member's exclusive lease. The server decides
 * the overlap (ListLeases with the path as its resource), so the hooks and AcquireLease
 * agree by construction. A shared lease is for reading and never stops an edit; the
 * caller's own leases never stop its own edits.
 */

export interface LeaseConflict {
  /** The path as checked: relative to the repository's root, with "/". */
  path: string;
  lease: Lease;
}

/** At most this many ListLeases calls at once (a commit may touch many files). */
const PARALLEL = 8;

export async function leaseConflicts(
  client: TeamClient,
  me: string,
  paths: string[],
): Promise<LeaseConflict[]> {
  const found: LeaseConflict[] = [];
  for (let i = 0; i < paths.length; i += PARALLEL) {
    const batch = paths.slice(i, i + PARALLEL);
    const listed = await Promise.all(
      batch.map((path) => client.listLeases({ resource: leaseQueryFor(path) })),
    );
    batch.forEach((path, j) => {
      const lease = listed[j]?.find(
        (l) => l.holder !== me && leaseModeName(l.mode) === "exclusive",
      );
      if (lease) found.push({ path, lease });
    });
  }
  return found;
}

/** The longest resource the server takes (server/domain/lease-patterns.ts). */
const RESOURCE_MAX = 1024;

/**
 * The resource a repository path is asked about as (ListLeases' filter). A file's name may
 * hold what a lease's resource may not (`:`, `\`, control characters) or a glob's `*`; each
 * becomes `?`, which matches that one character, so the question still covers the file (and
 * at worst a sibling differing there) and is never refused: a refusal would fail the whole
 * check open, a commit's other files with it. A path longer than a resource may be is asked
 * as its first characters and everything under them. `task:x` is a file here, never the
 * named resource it resembles.
 */
export function leaseQueryFor(path: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters a resource refuses.
  const q = path.replace(/[\u0000-\u001f\u007f:\\*]/g, "?");
  if (q.length <= RESOURCE_MAX) return q;
  return `${q.slice(0, RESOURCE_MAX - 8).replace(/\/+$/, "")}*/**`;
}

/** Why an edit of `c.path` is refused: the holder, its pattern, its expiry, and how to ask. */
export function conflictSentence(c: LeaseConflict): string {
  const l = c.lease;
  return (
    `${c.path} is under ${l.holder}'s exclusive lease on ${JSON.stringify(l.resource)} ` +
    `(${l.leaseId}, until ${instant(l.expiresAt)}${l.reason ? `: ${l.reason}` : ""}). ` +
    `Do not edit it: ask ${l.holder} to release it (send_message to ${l.holder}), or wait ` +
    "until it expires and then acquire_lease it yourself; list_leases shows who holds what."
  );
}

/**
 * The repository's root for a working directory: the nearest folder upwards holding `.git`
 * (a folder, or a worktree's file); the directory itself when there is none.
 */
export function repositoryRoot(cwd: string): string {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, ".git"))) return dir;
    if (dirname(dir) === dir) return resolve(cwd);
  }
}

/** `file` relative to `root` with "/", or undefined when it lies outside the repository. */
export function repositoryPath(root: string, file: string): string | undefined {
  const rel = relative(root, resolve(root, file));
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  return rel.split(sep).join("/");
}
