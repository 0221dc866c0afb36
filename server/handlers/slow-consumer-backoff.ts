import { LimitError } from "../errors.js";

/** Which kind of stream was cut: each kind has its own window. */
export type BackedOffStream = "Subscribe" | "WatchTeam";

/**
 * After the server cut a member's stream for not reading (the slow-consumer guard), a reopen
 * of the same kind of stream by that member within the window is refused with RetryInfo: a
 * client that never reads would otherwise reopen at once, and be served a fresh page each
 * time, as fast as the cut comes round. A client that retries after the delay is served.
 */
export interface SlowConsumerBackoff {
  /** The stream of `memberId` was cut: its next open waits out the window. */
  cut(stream: BackedOffStream, memberId: number): void;
  /** Throws ResourceExhausted (rule slow-consumer-backoff, with RetryInfo) within a window. */
  check(stream: BackedOffStream, memberId: number, memberName: string): void;
}

export function createSlowConsumerBackoff(windowMs: number): SlowConsumerBackoff {
  // "kind member" -> when the window ends. Entries go once their window passed; at most one
  // per member and kind.
  const until = new Map<string, number>();
  const prune = (now: number) => {
    for (const [key, end] of until) if (end <= now) until.delete(key);
  };
  return {
    cut(stream, memberId) {
      if (windowMs <= 0) return;
      const now = Date.now();
      // The map is walked only when it grew large: most windows end untouched.
      if (until.size >= 1024) prune(now);
      until.set(`${stream} ${memberId}`, now + windowMs);
    },
    check(stream, memberId, memberName) {
      if (until.size === 0) return;
      const key = `${stream} ${memberId}`;
      const end = until.get(key);
      if (end === undefined) return;
      const waitMs = end - Date.now();
      if (waitMs <= 0) {
        until.delete(key);
        return;
      }
      throw new LimitError(
        "slow-consumer-backoff",
        `member "${memberName}"'s ${stream} stream was cut for not reading its responses; ` +
          `open it again in ${Math.ceil(waitMs)} ms (SLOW_CONSUMER_BACKOFF_MS), and read what ` +
          "it sends",
        waitMs,
      );
    },
  };
}
