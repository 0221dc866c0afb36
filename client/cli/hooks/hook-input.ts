import { z } from "zod";

/**
 * What Claude Code writes on a command hook's stdin (its "Hooks reference"): fields every
 * event has, and the ones our hooks read. Unknown fields are kept out of the way, not
 * refused: a newer Claude Code adds fields, and a hook must not break on them.
 */
export const hookInputSchema = z.looseObject({
  session_id: z.string().optional(),
  transcript_path: z.string().optional(),
  cwd: z.string().optional(),
  hook_event_name: z.string().optional(),
  /** Stop and SubagentStop: this stop follows a block by a Stop hook in the same turn. */
  stop_hook_active: z.boolean().optional(),
  /** SessionStart: startup, resume, clear or compact. */
  source: z.string().optional(),
  /** PostToolUse and PreToolUse: the tool the model called. */
  tool_name: z.string().optional(),
  /** PreToolUse: the tool's arguments (Edit's file_path is absolute). */
  tool_input: z.record(z.string(), z.unknown()).optional(),
});

export type HookInput = z.infer<typeof hookInputSchema>;

/** Parses the hook's stdin; an empty or unreadable input is an empty one (fail open). */
export function parseHookInput(raw: string): HookInput {
  if (raw.trim() === "") return {};
  try {
    const parsed = hookInputSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}
