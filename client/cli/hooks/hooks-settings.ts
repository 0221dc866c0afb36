import { type HookEvent, hookEventNames, hookEvents } from "./hook-events.js";

/** One hook command in Claude Code's settings.json. */
interface CommandHook {
  type: "command";
  command: string;
  timeout?: number;
  [other: string]: unknown;
}

/** One matcher group of an event in settings.json. */
interface MatcherGroup {
  matcher?: string;
  hooks: CommandHook[];
  [other: string]: unknown;
}

/** Seconds Claude Code gives one hook run; the hook itself fails open well before. */
export const HOOK_TIMEOUT_SECONDS = 30;

/**
 * The `hooks` block of `.claude/settings.json` for our events, each running
 * `<teamCommand> hook <event>` (teamCommand: how `team` is started, e.g. `node /abs/bin/team.js`).
 */
export function teamHooks(teamCommand: string): Record<string, MatcherGroup[]> {
  const hooks: Record<string, MatcherGroup[]> = {};
  for (const name of hookEventNames) {
    const event: HookEvent = hookEvents[name];
    const group: MatcherGroup = {
      ...(event.matcher !== undefined ? { matcher: event.matcher } : {}),
      hooks: [
        { type: "command", command: `${teamCommand} hook ${name}`, timeout: HOOK_TIMEOUT_SECONDS },
      ],
    };
    hooks[event.claudeEvent] = [group];
  }
  return hooks;
}

/** True for a hook command this tool wrote (any way of starting `team`). */
const ours = (command: unknown) =>
  typeof command === "string" && /\bteam(\.js)?["']? hook [a-z-]+$/.test(command.trim());

/**
 * `settings` (a parsed settings.json, or undefined for none) with our hooks merged in:
 * everything else is kept as it was (other settings, other hooks, other matcher groups);
 * our own earlier entries are replaced, so installing twice changes nothing.
 */
export function mergeTeamHooks(settings: unknown, teamCommand: string): Record<string, unknown> {
  const base =
    settings && typeof settings === "object" && !Array.isArray(settings)
      ? { ...(settings as Record<string, unknown>) }
      : {};
  const existing =
    base.hooks && typeof base.hooks === "object" && !Array.isArray(base.hooks)
      ? (base.hooks as Record<string, unknown>)
      : {};
  const merged: Record<string, unknown> = { ...existing };
  for (const [event, groups] of Object.entries(teamHooks(teamCommand))) {
    const kept = (Array.isArray(existing[event]) ? (existing[event] as unknown[]) : [])
      .map(withoutOurs)
      .filter((g) => g !== undefined);
    merged[event] = [...kept, ...groups];
  }
  return { ...base, hooks: merged };
}

/** A matcher group less our commands; undefined when nothing of it is left. */
function withoutOurs(group: unknown): unknown {
  if (!group || typeof group !== "object" || !Array.isArray((group as MatcherGroup).hooks)) {
    return group;
  }
  const g = group as MatcherGroup;
  const hooks = g.hooks.filter((h) => !ours(h?.command));
  if (hooks.length === g.hooks.length) return group;
  return hooks.length === 0 ? undefined : { ...g, hooks };
}
