import type { Identity } from "@team-protocols/client/identity.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { createBlockCounter } from "./block-counter.js";
import { newMessagesContext, sessionStartContext } from "./context-hooks.js";
import type { HookInput } from "./hook-input.js";
import type { ClaudeHookEvent, HookOutput } from "./hook-output.js";
import { decidePreToolUse, EDIT_TOOLS_MATCHER, unreachableDenial } from "./pre-tool-use.js";
import { decideStop } from "./stop-hook.js";

/** What one hook run decided: the answer to print, then what to do once it is printed. */
export interface HookDecision {
  output: HookOutput | undefined;
  delivered(): Promise<void>;
}

export interface HookContext {
  client: TeamClient;
  me: Identity;
  input: HookInput;
  /** Stop: at most this many blocks in a row. */
  maxBlocks: number;
  /** Where the Stop hook keeps its count of blocks in a row (default: the OS temp folder). */
  stateDir?: string | undefined;
}

/** One event `team hook <name>` answers, and where `team hooks install` puts it. */
export interface HookEvent {
  /** Claude Code's name for it in settings.json. */
  claudeEvent: ClaudeHookEvent;
  /** settings.json's matcher (tool events only). */
  matcher?: string;
  run(c: HookContext): Promise<HookDecision>;
  /** Fail closed (when configured): the answer when the server could not be asked. */
  unreachable?(input: HookInput, why: string): HookOutput | undefined;
}

const stop = (c: HookContext) =>
  decideStop({
    client: c.client,
    me: c.me,
    maxBlocks: c.maxBlocks,
    counter: createBlockCounter({
      sessionId: c.input.session_id ?? "",
      member: c.me.name,
      continuing: c.input.stop_hook_active === true,
      ...(c.stateDir ? { dir: c.stateDir } : {}),
    }),
  });

/**
 * The events, by the name `team hook` takes. A new one is one more row here, with its output shape in hook-output.ts;
 * `team hooks install` and `print` follow the table.
 */
export const hookEvents = {
  stop: { claudeEvent: "Stop", run: stop },
  "subagent-stop": { claudeEvent: "SubagentStop", run: stop },
  "session-start": {
    claudeEvent: "SessionStart",
    run: (c) => sessionStartContext(c.client, c.me),
  },
  "user-prompt-submit": {
    claudeEvent: "UserPromptSubmit",
    run: (c) => newMessagesContext(c.client, c.me, "UserPromptSubmit"),
  },
  "post-tool-use": {
    claudeEvent: "PostToolUse",
    matcher: "*",
    run: (c) => newMessagesContext(c.client, c.me, "PostToolUse"),
  },
  "pre-tool-use": {
    claudeEvent: "PreToolUse",
    matcher: EDIT_TOOLS_MATCHER,
    run: (c) => decidePreToolUse(c.client, c.me, c.input),
    unreachable: unreachableDenial,
  },
} satisfies Record<string, HookEvent>;

export type HookEventName = keyof typeof hookEvents;
export const hookEventNames = Object.keys(hookEvents) as HookEventName[];
