import { execFile } from "node:child_process";
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { promisify } from "node:util";
import { whoAmI } from "@team-protocols/client/identity.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { conflictSentence, leaseConflicts } from "./lease-guard.js";

const run = promisify(execFile);

/** The line that marks a pre-commit hook as ours (install-git replaces only such a hook). */
export const GIT_HOOK_MARK =
  "# team-protocols: refuses a commit touching another member's exclusive lease";

/** The hook git runs: our check, with the environment the commit runs in (TEAM_URL, TEAM_TOKEN). */
export function gitHookScript(teamCommand: string): string {
  return `#!/bin/sh\n${GIT_HOOK_MARK}\nexec ${teamCommand} hooks pre-commit\n`;
}

/**
 * Writes the pre-commit hook where git looks for it (core.hooksPath, a worktree's common
 * folder: `git rev-parse --git-path hooks` knows). A pre-commit hook that is not ours is
 * left alone: the caller is told to chain it by hand.
 */
export async function installGitHook(dir: string, teamCommand: string): Promise<string> {
  const { stdout } = await run("git", ["rev-parse", "--git-path", "hooks"], { cwd: dir });
  const hooks = stdout.trim();
  const file = join(isAbsolute(hooks) ? hooks : join(dir, hooks), "pre-commit");
  const current = await readFile(file, "utf8").catch(() => undefined);
  if (current !== undefined && !current.includes(GIT_HOOK_MARK)) {
    throw new ForeignHookError(file);
  }
  await mkdir(dirname(file), { recursive: true });
  await writeFile(`${file}.tmp`, gitHookScript(teamCommand));
  await chmod(`${file}.tmp`, 0o755);
  await rename(`${file}.tmp`, file);
  return file;
}

export class ForeignHookError extends Error {
  constructor(readonly file: string) {
    super(
      `${file} exists and is not ours: add the line "team hooks pre-commit || exit 1" to it instead`,
    );
  }
}

/** The paths the staged commit touches (added, changed, deleted, renamed: both names). */
export async function stagedPaths(dir: string): Promise<string[]> {
  const { stdout } = await run(
    "git",
    ["diff", "--cached", "--name-status", "-z", "--no-renames", "--no-color"],
    { cwd: dir, maxBuffer: 64 * 1024 * 1024 },
  );
  // -z: status NUL path NUL …; --no-renames makes a rename a delete and an add.
  const fields = stdout.split("\0").filter((f) => f !== "");
  const paths: string[] = [];
  for (let i = 1; i < fields.length; i += 2) paths.push(fields[i] as string);
  return [...new Set(paths)];
}

/**
 * The check: the lines saying why the commit is refused (empty: it may go on). git gives the
 * paths relative to the repository's root, as leases name them.
 */
export async function preCommitRefusals(client: TeamClient, dir: string): Promise<string[]> {
  const paths = await stagedPaths(dir);
  if (paths.length === 0) return [];
  const me = await whoAmI(client);
  const conflicts = await leaseConflicts(client, me.name, paths);
  return conflicts.map(conflictSentence);
}
