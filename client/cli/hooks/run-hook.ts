import { whoAmI } from "@team-protocols/client/identity.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { type HookEvent, type HookEventName, hookEvents } from "./hook-events.js";
import { parseHookInput } from "./hook-input.js";

export interface RunHookOptions {
  event: HookEventName;
  client: TeamClient;
  /** The hook's stdin (Claude Code's JSON). */
  stdin: string;
  write(text: string): Promise<void>;
  warn(line: string): void;
  maxBlocks: number;
  /** The whole run must have decided by then; else it fails open. */
  deadlineMs: number;
  stateDir?: string | undefined;
  /** An event that can refuse (pre-tool-use) refuses when the server cannot be asked. */
  failClosed?: boolean;
}

/** Exit codes: 0 with or without an answer; 1 when it failed open (Claude Code goes on). */
export const HOOK_EXIT = { ok: 0, failedOpen: 1 } as const;

/**
 * One hook run: decide, print the answer, and only then ack what it showed (a run killed
 * between the two shows the same messages again next time: never lost). Any failure, the
 * server unreachable included, fails open: one line on stderr, nothing on stdout, and the
 * agent goes on as if there were no hook; unless `failClosed` and the event can refuse
 * (pre-tool-use denies the edit it could not check).
 */
export async function runHook(o: RunHookOptions): Promise<number> {
  const input = parseHookInput(o.stdin);
  let decision: Awaited<ReturnType<(typeof hookEvents)[HookEventName]["run"]>>;
  try {
    decision = await withDeadline(o.deadlineMs, async () => {
      const me = await whoAmI(o.client);
      return hookEvents[o.event].run({
        client: o.client,
        me,
        input,
        maxBlocks: o.maxBlocks,
        stateDir: o.stateDir,
      });
    });
  } catch (err) {
    const event: HookEvent = hookEvents[o.event];
    const closed = o.failClosed ? event.unreachable?.(input, reason(err)) : undefined;
    if (closed) {
      o.warn(`team hook ${o.event}: failed closed: ${reason(err)}`);
      await o.write(`${JSON.stringify(closed)}\n`);
      return HOOK_EXIT.ok;
    }
    o.warn(`team hook ${o.event}: not applied: ${reason(err)}`);
    return HOOK_EXIT.failedOpen;
  }
  if (decision.output) await o.write(`${JSON.stringify(decision.output)}\n`);
  try {
    await withDeadline(o.deadlineMs, () => decision.delivered());
  } catch (err) {
    // Shown but not acked: the next hook shows these messages again (at-least-once).
    o.warn(`team hook ${o.event}: messages shown but not acked (${reason(err)})`);
  }
  return HOOK_EXIT.ok;
}

async function withDeadline<T>(ms: number, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}

const reason = (err: unknown) =>
  (err instanceof Error ? err.message : String(err)).split("\n")[0]?.slice(0, 300) ?? "";
