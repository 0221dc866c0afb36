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
import { markShared } from "../http/shared-responses.js";
import { responseCutKey } from "../http/slow-consumer-guard.js";
import { type WritePressure, writePressureKey } from "../http/write-pressure.js";
import type { Subscription as TeamStream } from "../inbox/hub.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Database } from "../store/database.js";
import { currentSnapshot, type FeedEvent, readTeamFeed } from "../store/team-feed.js";
import { toTeamEvent } from "./convert.js";
import { throwIfDeadlinePassed } from "./deadline.js";
import { FeedPageReads } from "./feed-page-share.js";
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
  const reads = new FeedPageReads<WatchTeamResponse>(
    new ReadGate(options.maxConcurrentReads ?? 4),
    (r) => readTeamFeed(db, r.teamId, r.window, r.limit, r.maxBytes),
    {
      held: metrics ? (delta) => metrics.watchPageBytesHeld(delta) : undefined,
      page: metrics ? (source) => metrics.watchPage(source) : undefined,
    },
  );
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
          const end = yield* deliverPage(reads, caller, stream, pressure, page);
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
 * The page may be shared with other streams of the team that asked for the same page at
 * the same time (feed-page-share.ts): each event's response is made once, and the page
 * keeps an event only while a sharer may still write it.
 *
 * While the consumer writes an event out, this generator is suspended at its yield. When
 * that write is not accepted (the client is not reading: its HTTP/2 window is full), this
 * stream's claim on the rest of the page is let go at once, and read again after the last
 * event written once the stream drained: a stalled stream holds its write buffer and
 * nothing of the page, as a stalled Subscribe does (subscribe.ts).
 */
async function* deliverPage(
  reads: FeedPageReads<WatchTeamResponse>,
  caller: Caller,
  stream: TeamStream,
  pressure: WritePressure | undefined,
  { cursor, maxBytes }: { cursor: FeedCursor; maxBytes: number },
): AsyncGenerator<WatchTeamResponse, PageEnd> {
  const claim = await reads.claim({
    teamId: caller.teamId,
    teamName: caller.teamName,
    window: { since: cursor.since, upto: cursor.window?.upto, after: cursor.window?.after },
    limit: BATCH,
    maxBytes,
  });
  const { page } = claim;
  const { upto } = page;
  const read = page.length;
  let blocked = false;
  const unlisten = pressure?.onBlocked(() => {
    blocked = true;
    // The event being written was taken; the ones after it are let go.
    claim.letGo();
  });
  let after: bigint | undefined;
  try {
    while (claim.remaining > 0) {
      if (stream.endReason) break;
      // What is needed after the yield, read first: while the consumer writes, this frame
      // holds no reference to the event or its response (a stalled write may last long).
      const position = claim.nextPosition();
      const finishes = claim.taken + 1 === read && !page.more;
      // The last event of a finished window leaves the stream at the window's end.
      const at: FeedCursor = finishes
        ? { since: upto }
        : { since: cursor.since, window: { upto, after: position } };
      yield claim.take((event) => eventResponse(caller.teamName, event, at));
      // Resumed: the consumer wrote the event out (and waited for 'drain' if it had to).
      after = position;
    }
  } finally {
    unlisten?.();
    // Left early (the stream ended): what was not written is let go with the page.
    claim.letGo();
  }
  const next = claim.taken;
  const delivered = after === undefined ? 0 : next;
  const more = page.more || next < read;
  if (!more || after === undefined) {
    return { cursor: more ? cursor : { since: upto }, more, delivered, blocked };
  }
  return { cursor: { since: cursor.since, window: { upto, after } }, more, delivered, blocked };
}

/** An event's response: the same for every stream that shares its page. */
function eventResponse(team: string, event: FeedEvent, at: FeedCursor): WatchTeamResponse {
  return markShared(response(encodeCursor(at), { case: "event", value: toTeamEvent(team, event) }));
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
