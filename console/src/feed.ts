import { resumableStream } from "@team-protocols/client/resumable-stream.js";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";
import type { WatchTeamResponse } from "@team-protocols/contract/team/v1/team_service_pb.js";
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

/**
 * The team feed, live, for as long as `signal` is not aborted: WatchTeam from the oldest
 * event the server keeps, then, whenever the stream breaks (the server restarts, the network
 * drops), WatchTeam again from the cursor of the last response received, after a backoff.
 * The reconnecting and the retry policy are the client library's (`resumableStream`, the
 * codes of stream-retry.ts), the same as `team watch` and every agent's inbox: a refusal no
 * retry can fix ends the feed. The server delivers exactly what follows a cursor, so across
 * reconnects every event arrives once, in order.
 */
export async function runFeed(rpc: TeamRpc, handlers: FeedHandlers, signal: AbortSignal) {
  let cursor = "";
  let connects = 0;
  let breaks = 0;
  const responses = resumableStream<WatchTeamResponse, WatchTeamResponse>({
    open: (attempt) => rpc.watchTeam({ cursor }, { signal: attempt }),
    onResponse: (response) => {
      cursor = response.cursor;
      return response;
    },
    closed: signal,
    backoff: { initialMs: 250, maxMs: 5_000 },
    idleTimeoutMs: SILENCE_MS,
    onStatus: (status) => {
      switch (status.state) {
        case "connecting":
          return handlers.onStatus({ state: "connecting", connects });
        case "connected":
          breaks = 0;
          connects++;
          return handlers.onStatus({ state: "live", connects });
        case "disconnected":
          breaks++;
          return handlers.onStatus({
            state: "retrying",
            connects,
            attempt: breaks,
            error: status.error ?? new Error("the server ended the feed"),
          });
      }
    },
  });
  try {
    for await (const response of responses) {
      if (response.kind.case === "event") handlers.onEvents([response.kind.value]);
      else handlers.onHeartbeat();
    }
  } catch (error) {
    if (!signal.aborted) handlers.onStatus({ state: "ended", connects, error });
  }
}
