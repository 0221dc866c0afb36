import { Code, ConnectError } from "@connectrpc/connect";
import { createBackoff, sleep } from "@team-protocols/client/backoff.js";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";
import type { TeamRpc } from "./rpc.js";

/**
 * Where the feed is. `connects` counts the streams that delivered something: after a break,
 * the feed is live again once it reaches 2, 3, ….
 */
export type FeedStatus =
  /** A stream is open and nothing came yet (the server answers with the first event or heartbeat). */
  | { state: "connecting"; connects: number }
  | { state: "live"; connects: number }
  /** The stream broke; another starts after a backoff. */
  | { state: "retrying"; connects: number; attempt: number; error: unknown }
  /** A refusal no retry can fix (a revoked token, a teammate's token). */
  | { state: "ended"; connects: number; error: unknown };

export interface FeedHandlers {
  /** Events in the order WatchTeam delivered them (a batch: what one read brought). */
  onEvents(events: TeamEvent[]): void;
  /** A heartbeat: the team is idle (a good moment to refresh what events do not carry). */
  onHeartbeat(): void;
  onStatus(status: FeedStatus): void;
}

/**
 * A connection that brings nothing, not even a heartbeat, for this long is taken for dead
 * (a proxy or network that went silent) and replaced. The server's heartbeat interval is
 * 15 s by default.
 */
const SILENCE_MS = 45_000;

/** Refusals a retry cannot fix: a revoked token, a member that may not watch, a cursor refused. */
const FINAL = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument]);

/**
 * The team feed, live, for as long as `signal` is not aborted: WatchTeam from the oldest
 * event the server keeps, then, whenever the stream breaks (the server restarts, the network
 * drops), WatchTeam again from the cursor of the last response received, after a backoff.
 * The server delivers exactly what follows a cursor, so across reconnects every event
 * arrives once, in order.
 */
export async function runFeed(rpc: TeamRpc, handlers: FeedHandlers, signal: AbortSignal) {
  const backoff = createBackoff({ initialMs: 250, maxMs: 5_000 });
  let cursor = "";
  let connects = 0;
  while (!signal.aborted) {
    handlers.onStatus({ state: "connecting", connects });
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    signal.addEventListener("abort", stop, { once: true });
    let silence = setTimeout(stop, SILENCE_MS);
    try {
      const stream = rpc.watchTeam({ cursor }, { signal: attempt.signal });
      let first = true;
      for await (const response of stream) {
        clearTimeout(silence);
        silence = setTimeout(stop, SILENCE_MS);
        if (first) {
          first = false;
          connects++;
          backoff.reset();
          handlers.onStatus({ state: "live", connects });
        }
        cursor = response.cursor;
        if (response.kind.case === "event") handlers.onEvents([response.kind.value]);
        else handlers.onHeartbeat();
      }
      // A clean end: the server is stopping. Resume like after any break.
      throw new ConnectError("the server ended the feed", Code.Unavailable);
    } catch (err) {
      if (signal.aborted) return;
      const error = ConnectError.from(err);
      if (FINAL.has(error.code)) {
        handlers.onStatus({ state: "ended", connects, error });
        return;
      }
      handlers.onStatus({
        state: "retrying",
        connects,
        attempt: backoff.attempts + 1,
        error,
      });
      await sleep(backoff.next(), signal);
    } finally {
      clearTimeout(silence);
      signal.removeEventListener("abort", stop);
    }
  }
}
