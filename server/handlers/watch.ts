import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  TeamService,
  WatchHeartbeatSchema,
  type WatchTeamResponse,
  WatchTeamResponseSchema,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import {
  decodeCursor,
  EMPTY_SNAPSHOT,
  encodeCursor,
  type FeedCursor,
} from "../domain/feed-cursor.js";
import { LimitError, RuleViolationError } from "../errors.js";
import { responseCutKey } from "../http/slow-consumer-guard.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Database } from "../store/database.js";
import { currentSnapshot, readTeamFeed } from "../store/team-feed.js";
import { toTeamEvent } from "./convert.js";
import { throwIfDeadlinePassed } from "./deadline.js";

/** Events and bytes of bodies read per query: bound the memory one stream holds. */
const BATCH = 256;
const BATCH_BYTES = 1024 * 1024;

export interface WatchOptions {
  db: Database;
  teams: TeamHub;
  /** A heartbeat is sent after this long without an event. */
  heartbeatIntervalMs: number;
  /** WatchTeam streams one member may hold open at once in this process. */
  maxPerMember: number;
  /** WatchTeam streams one team's members may hold open at once in this process; 0: no limit. */
  maxPerTeam?: number;
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
  const { db, teams, heartbeatIntervalMs, maxPerMember } = options;
  const maxPerTeam = options.maxPerTeam ?? 0;
  return {
    async *watchTeam(req, ctx) {
      const caller = requireCaller(ctx.values);
      // Streams do not pass the rules interceptor: the same table, applied here
      // (watch-lead-or-observer refuses a teammate).
      checkRules({ method: TeamService.method.watchTeam, request: req, caller });
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
      ctx.values.get(responseCutKey)?.addEventListener("abort", () => stream.close(), {
        once: true,
      });
      try {
        let idle = false;
        for (;;) {
          // A window a cursor named ends at an old snapshot: what came after it is read next,
          // at once, not after a wake-up that already happened before this stream opened.
          const oldWindow = cursor.window !== undefined;
          const page = await readTeamFeed(
            db,
            caller.teamId,
            {
              since: cursor.since,
              upto: cursor.window?.upto,
              after: cursor.window?.after,
            },
            BATCH,
            BATCH_BYTES,
          );
          const last = page.events.at(-1);
          for (const event of page.events) {
            if (stream.endReason) break;
            // The last event of a finished window leaves the stream at the window's end.
            const at: FeedCursor =
              event === last && !page.more
                ? { since: page.upto }
                : { since: cursor.since, window: { upto: page.upto, after: event.position } };
            yield response(encodeCursor(at), {
              case: "event",
              value: toTeamEvent(caller.teamName, event),
            });
          }
          if (stream.endReason) break;
          cursor =
            page.more && last
              ? { since: cursor.since, window: { upto: page.upto, after: last.position } }
              : { since: page.upto };
          if (page.more || oldWindow) continue;
          // Everything up to now is sent: a history-only watch ends here.
          if (req.historyOnly) break;
          if (idle && page.events.length === 0) {
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
