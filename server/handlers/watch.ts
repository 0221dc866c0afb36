import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  TeamService,
  WatchHeartbeatSchema,
  type WatchTeamResponse,
  WatchTeamResponseSchema,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import {
  decodeCursor,
  EMPTY_SNAPSHOT,
  encodeCursor,
  type FeedCursor,
} from "../domain/feed-cursor.js";
import { LimitError, RuleViolationError } from "../errors.js";
import { responseCutKey } from "../http/slow-consumer-guard.js";
import { type WritePressure, writePressureKey } from "../http/write-pressure.js";
import type { Subscription as TeamStream } from "../inbox/hub.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Database, Queryable } from "../store/database.js";
import { currentSnapshot, type FeedEvent, readTeamFeed } from "../store/team-feed.js";
import { toTeamEvent } from "./convert.js";
import { throwIfDeadlinePassed } from "./deadline.js";
import { ReadGate } from "./feed-read-gate.js";
import type { SlowConsumerBackoff } from "./slow-consumer-backoff.js";

/** Events read per query at most. */
const BATCH = 256;
/**
 * Bytes of bodies read per query (the first event always comes), by level, as Subscribe's
 * pages (subscribe.ts): a stream starts at the smallest, goes one level up after each full
 * page written out without a blocked write, and back to the smallest after a blocked one,
 * whose unwritten rest was let go. A client that reads slowly, or not at all, so costs the
 * server a small page read per few KiB it takes, not 1 MiB. (Streams started at the largest
 * until 2026-12-05: 640 feeds opened at once read 1 MiB each, +200 MiB and minutes of CPU.)
 */
const PAGE_BYTES = [32, 64, 128, 256, 512, 1024].map((kib) => kib * 1024);

export interface WatchOptions {
  db: Database;
  teams: TeamHub;
  /** A heartbeat is sent after this long without an event. */
  heartbeatIntervalMs: number;
  /** WatchTeam streams one member may hold open at once in this process. */
  maxPerMember: number;
  /** WatchTeam streams one team's members may hold open at once in this process; 0: no limit. */
  maxPerTeam?: number;
  /** Feed page reads running at once in this process (the rest wait their turn). Default 4. */
  maxConcurrentReads?: number;
  metrics?: Metrics | undefined;
  /** Refuses a member's reopen for a while after its stream was cut for not reading. */
  backoff?: SlowConsumerBackoff | undefined;
}

/**
 * WatchTeam: the team feed after the cursor, then live (docs/watch.md). Each read delivers
 * what became visible since the last one; the stream is registered before its first read,
 * so a commit cannot fall between a read and the wait. After every heartbeat interval
 * without a wake-up the feed is read again (a lost wake-up costs that long, not an event),
 * and if nothing came, a heartbeat carries the fresh cursor.
 */
export function watchHandler(
  options: WatchOptions,
): Pick<ServiceImpl<typeof TeamService>, "watchTeam"> {
  const { db, teams, heartbeatIntervalMs, maxPerMember, metrics, backoff } = options;
  const maxPerTeam = options.maxPerTeam ?? 0;
  const gate = new ReadGate(options.maxConcurrentReads ?? 4);
  const feedDb: Queryable = {
    query: <R extends object>(sql: string, params?: unknown[]) =>
      gate.run(() => db.query<R>(sql, params)),
  };
  return {
    async *watchTeam(req, ctx) {
      const caller = requireCaller(ctx.values);
      // Streams do not pass the rules interceptor: the same table, applied here
      // (watch-lead-or-observer refuses a teammate).
      checkRules({ method: TeamService.method.watchTeam, request: req, caller });
      backoff?.check("WatchTeam", caller.id, caller.name);
      let cursor: FeedCursor =
        req.cursor !== ""
          ? cursorFrom(req.cursor)
          : { since: req.fromNow ? await currentSnapshot(db) : EMPTY_SNAPSHOT };
      if (teams.countOf(caller.id) >= maxPerMember) {
        throw new LimitError(
          "watches-per-member",
          `member "${caller.name}" already has ${maxPerMember} open WatchTeam streams ` +
            "(MAX_SUBSCRIPTIONS_PER_MEMBER); close one, or resume on the one you have",
        );
      }
      if (maxPerTeam > 0 && teams.countOfTeam(caller.teamId) >= maxPerTeam) {
        throw new LimitError(
          "watches-per-team",
          `team "${caller.teamName}" already has ${maxPerTeam} open WatchTeam streams ` +
            "(MAX_WATCHES_PER_TEAM); close one, or resume on one you have",
        );
      }
      const stream = teams.open(caller.teamId, caller.id, ctx.signal);
      // Also released when the server cuts a client that stopped reading.
      ctx.values.get(responseCutKey)?.addEventListener(
        "abort",
        () => {
          stream.close();
          backoff?.cut("WatchTeam", caller.id);
        },
        { once: true },
      );
      const pressure = ctx.values.get(writePressureKey);
      try {
        let idle = false;
        let level = 0;
        for (;;) {
          // A window a cursor named ends at an old snapshot: what came after it is read next,
          // at once, not after a wake-up that already happened before this stream opened.
          const oldWindow = cursor.window !== undefined;
          const page = { maxBytes: PAGE_BYTES[level] as number, cursor };
          const end = yield* deliverPage(feedDb, caller, stream, pressure, metrics, page);
          if (stream.endReason) break;
          cursor = end.cursor;
          if (end.blocked) level = 0;
          else if (end.more) level = Math.min(level + 1, PAGE_BYTES.length - 1);
          if (end.more || oldWindow) continue;
          // Everything up to now is sent: a history-only watch ends here.
          if (req.historyOnly) break;
          if (idle && end.delivered === 0) {
            yield response(encodeCursor(cursor), {
              case: "heartbeat",
              value: create(WatchHeartbeatSchema),
            });
          }
          const woke = await stream.wait(heartbeatIntervalMs);
          if (woke === "ended") break;
          idle = woke === "timeout";
        }
        throwIfDeadlinePassed(ctx.signal);
        const error = stream.endReason?.error;
        if (error) throw error;
      } finally {
        stream.close();
      }
    },
  };
}

interface PageEnd {
  /** Where the next read starts: after the last event written out. */
  cursor: FeedCursor;
  /** More events may be waiting in the window: read on at once. */
  more: boolean;
  /** Events yielded from this page. */
  delivered: number;
  /** A write of this page was not accepted at once (the client is reading slowly, or not). */
  blocked: boolean;
}

/**
 * Reads one page of the feed after `cursor` and yields its events. A generator of its own,
 * so that nothing of the page stays referenced while the stream then waits, idle.
 *
 * While the consumer writes an event out, this generator is suspended at its yield. When
 * that write is not accepted (the client is not reading: its HTTP/2 window is full), the
 * rest of the page is let go at once, and read again after the last event written once the
 * stream drained: a stalled stream holds its write buffer and nothing of the page, as a
 * stalled Subscribe does (subscribe.ts).
 */
async function* deliverPage(
  db: Queryable,
  caller: Caller,
  stream: TeamStream,
  pressure: WritePressure | undefined,
  metrics: Metrics | undefined,
  { cursor, maxBytes }: { cursor: FeedCursor; maxBytes: number },
): AsyncGenerator<WatchTeamResponse, PageEnd> {
  const page = await readTeamFeed(
    db,
    caller.teamId,
    { since: cursor.since, upto: cursor.window?.upto, after: cursor.window?.after },
    BATCH,
    maxBytes,
  );
  const { upto } = page;
  const events = page.events;
  const read = events.length;
  // Bytes of this page not yet written out, for the held-bytes gauge.
  let held = 0;
  if (metrics) {
    for (const e of events) held += feedEventBytes(e);
    metrics.watchPageBytesHeld(held);
  }
  let next = 0;
  let blocked = false;
  const unlisten = pressure?.onBlocked(() => {
    blocked = true;
    // The event being written is at next - 1; the ones after it are let go.
    if (metrics) {
      let dropped = 0;
      for (let i = next; i < events.length; i++) dropped += feedEventBytes(events[i] as FeedEvent);
      held -= dropped;
      metrics.watchPageBytesHeld(-dropped);
    }
    events.length = Math.min(events.length, next);
  });
  let after: bigint | undefined;
  try {
    while (next < events.length) {
      if (stream.endReason) break;
      // What is needed after the yield, read first: while the consumer writes, this frame
      // holds no reference to the event or its response (a stalled write may last long).
      const position = (events[next] as FeedEvent).position;
      const finishes = next + 1 === read && !page.more;
      // The last event of a finished window leaves the stream at the window's end.
      const at: FeedCursor = finishes
        ? { since: upto }
        : { since: cursor.since, window: { upto, after: position } };
      if (metrics) {
        const bytes = feedEventBytes(events[next] as FeedEvent);
        held -= bytes;
        metrics.watchPageBytesHeld(-bytes);
      }
      yield takeEvent(caller.teamName, events, next++, at);
      // Resumed: the consumer wrote the event out (and waited for 'drain' if it had to).
      after = position;
    }
  } finally {
    unlisten?.();
    // Left early (the stream ended): what was not written is let go with the page.
    if (metrics && held !== 0) metrics.watchPageBytesHeld(-held);
  }
  const delivered = after === undefined ? 0 : next;
  const more = page.more || next < read;
  if (!more || after === undefined) {
    return { cursor: more ? cursor : { since: upto }, more, delivered, blocked };
  }
  return { cursor: { since: cursor.since, window: { upto, after } }, more, delivered, blocked };
}

/** The response for events[i], whose slot is emptied: the page no longer holds the event. */
function takeEvent(team: string, events: FeedEvent[], i: number, at: FeedCursor) {
  const event = events[i] as FeedEvent;
  (events as (FeedEvent | undefined)[])[i] = undefined;
  return response(encodeCursor(at), { case: "event", value: toTeamEvent(team, event) });
}

/** The bytes of bodies an event carries (what dominates a page's memory). */
function feedEventBytes(event: FeedEvent): number {
  switch (event.source) {
    case "envelope":
      return event.body.byteLength;
    case "request":
      return event.request.requestBody.byteLength + (event.request.responseBody?.byteLength ?? 0);
    case "task":
      return event.task.subject.length + event.task.description.length;
    case "member":
      return 0;
  }
}

function response(cursor: string, kind: WatchTeamResponse["kind"]): WatchTeamResponse {
  return create(WatchTeamResponseSchema, { cursor, kind });
}

/** A cursor a client sent back, checked before PostgreSQL parses it. */
function cursorFrom(text: string): FeedCursor {
  const cursor = decodeCursor(text);
  if (cursor) return cursor;
  throw new RuleViolationError(
    "size-shape",
    "invalid-argument",
    "cursor is not one this server gave out: pass the cursor of a WatchTeam response, or none",
    "cursor",
  );
}
