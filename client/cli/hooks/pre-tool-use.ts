import { resolve } from "node:path";
import type { Identity } from "@team-protocols/client/identity.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { HookInput } from "./hook-input.js";
import { denyTool, type HookOutput } from "./hook-output.js";
import { conflictSentence, leaseConflicts, repositoryPath, repositoryRoot } from "./lease-guard.js";

/** Claude Code's tools that change a file, and the field of their input naming it. */
export const EDIT_TOOLS: Record<string, string> = {
  Edit: "file_path",
  Write: "file_path",
  MultiEdit: "file_path",
  NotebookEdit: "notebook_path",
};

/** settings.json's matcher: the edit tools only (a Read never asks the server). */
export const EDIT_TOOLS_MATCHER = Object.keys(EDIT_TOOLS).join("|");

/** The repository path an edit tool call changes; undefined for anything else. */
export function editedPath(input: HookInput): string | undefined {
  const field = EDIT_TOOLS[input.tool_name ?? ""];
  const file = field ? input.tool_input?.[field] : undefined;
  if (typeof file !== "string" || file === "") return undefined;
  // Claude Code gives an absolute path; a relative one is taken from the session's cwd.
  const cwd = input.cwd ?? process.cwd();
  return repositoryPath(repositoryRoot(cwd), resolve(cwd, file));
}

/**
 * PreToolUse: an edit of a file under another member's exclusive lease is denied, with the
 * reason the model reads (who holds it, its pattern and expiry, how to ask); anything else
 * gets no answer (Claude Code goes on as without the hook: its own permission rules apply).
 */
export async function decidePreToolUse(
  client: TeamClient,
  me: Identity,
  input: HookInput,
): Promise<{ output: HookOutput | undefined; delivered(): Promise<void> }> {
  const none = { output: undefined, delivered: async () => {} };
  const path = editedPath(input);
  if (path === undefined) return none;
  const [conflict] = await leaseConflicts(client, me.name, [path]);
  if (!conflict) return none;
  return {
    output: denyTool(`lease-held: ${conflictSentence(conflict)}`),
    delivered: none.delivered,
  };
}

/** Fail closed: the edit is denied because no server could say whether it is leased. */
export function unreachableDenial(input: HookInput, why: string): HookOutput | undefined {
  const path = editedPath(input);
  if (path === undefined) return undefined;
  return denyTool(
    `lease-unknown: the team's server could not be asked whether ${path} is leased (${why}), and this hook is set to fail closed (TEAM_LEASE_FAIL_CLOSED). Do not edit it now: try again later, or ask the lead.`,
  );
}
