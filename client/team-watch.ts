import type { Client } from "@connectrpc/connect";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";
import type {
  TeamService,
  WatchTeamResponse,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { BackoffOptions } from "./backoff.js";
import { resumableStream } from "./resumable-stream.js";
import type { TeamError } from "./team-error.js";

export interface TeamWatchOptions {
  /** Resume after this cursor (a previous watch's `cursor`). Unset: the whole kept feed. */
  cursor?: string;
  /** With no cursor: only what happens from now on. */
  fromNow?: boolean;
  /** Ends the iteration: the loop exits normally. */
  signal?: AbortSignal;
  /** Delays between reconnects. */
  backoff?: BackoffOptions;
  /**
   * With no event or heartbeat for this long, the connection is presumed dead and replaced.
   * Default 45 s: three of the server's default heartbeats.
   */
  idleTimeoutMs?: number;
  /** Told when the stream opens, delivers its first response, or breaks. */
  onStatus?: (status: TeamWatchStatus) => void;
}

export type TeamWatchStatus =
  | { state: "connecting"; cursor: string | undefined }
  | { state: "connected" }
  | { state: "disconnected"; error: TeamError | undefined; retryInMs: number };

/**
 * The whole team's feed (WatchTeam; the lead's or an observer's token) as an async iterator
 * that survives broken streams and server restarts: it reconnects with backoff and resumes
 * from the last cursor the server gave (an event's or a heartbeat's), which the server
 * answers with exactly what followed, so each event reaches the loop once.
 *
 *     for await (const event of team.watch()) { ... }
 */
export interface TeamWatch extends AsyncIterable<TeamEvent> {
  /** Where to resume: the cursor of the last event handed out (or of a later heartbeat). */
  readonly cursor: string | undefined;
  /** How many times a stream was opened (1 + reconnects). */
  readonly connects: number;
  /** Ends the iteration. */
  close(): void;
}

export function createTeamWatch(
  rpc: Client<typeof TeamService>,
  options: TeamWatchOptions = {},
): TeamWatch {
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  const report = options.onStatus ?? (() => {});
  const closed = new AbortController();
  const onAbort = () => closed.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) closed.abort();
  let cursor = options.cursor;
  let connects = 0;
  let iterating = false;

  const request = () => (cursor === undefined ? { fromNow: options.fromNow ?? false } : { cursor });

  async function* events(): AsyncGenerator<TeamEvent> {
    try {
      yield* resumableStream({
        open: (signal) => rpc.watchTeam(request(), { signal }),
        onResponse(response: WatchTeamResponse) {
          // Every response moves the cursor, a heartbeat too: a reconnect starts from there.
          cursor = response.cursor;
          return response.kind.case === "event" ? response.kind.value : undefined;
        },
        closed: closed.signal,
        backoff: options.backoff,
        idleTimeoutMs,
        onStatus(status) {
          if (status.state !== "connecting") return report(status);
          connects++;
          report({ state: "connecting", cursor });
        },
      });
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  return {
    [Symbol.asyncIterator]() {
      if (iterating) throw new Error("a team watch can be iterated once; create another one");
      iterating = true;
      return events();
    },
    get cursor() {
      return cursor;
    },
    get connects() {
      return connects;
    },
    close: () => closed.abort(),
  };
}
