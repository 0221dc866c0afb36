/**
 * What a command hook prints on stdout, in Claude Code's format (its "Hooks reference").
 * Nothing printed and exit code 0 means "go on as if there were no hook".
 */
export type HookOutput =
  /** Stop / SubagentStop: the model is not allowed to stop; `reason` is its next instruction. */
  | { decision: "block"; reason: string }
  /** SessionStart, UserPromptSubmit, PostToolUse: text added to the model's context. */
  | { hookSpecificOutput: { hookEventName: ClaudeHookEvent; additionalContext: string } }
  /** PreToolUse: the tool call is not run; the model reads the reason. */
  | {
      hookSpecificOutput: {
        hookEventName: "PreToolUse";
        permissionDecision: "deny";
        permissionDecisionReason: string;
      };
    };

/** Claude Code's names of the events our hooks answer. */
export type ClaudeHookEvent =
  | "Stop"
  | "SubagentStop"
  | "SessionStart"
  | "UserPromptSubmit"
  | "PostToolUse"
  | "PreToolUse";

export const blockStop = (reason: string): HookOutput => ({ decision: "block", reason });

export const addContext = (event: ClaudeHookEvent, additionalContext: string): HookOutput => ({
  hookSpecificOutput: { hookEventName: event, additionalContext },
});

/**
 * PreToolUse's refusal. Only "deny" is ever said: an "allow" would skip the user's own
 * permission prompts, so a hook with nothing to refuse prints nothing.
 */
export const denyTool = (reason: string): HookOutput => ({
  hookSpecificOutput: {
    hookEventName: "PreToolUse",
    permissionDecision: "deny",
    permissionDecisionReason: reason,
  },
});
