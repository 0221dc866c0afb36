import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GetThreadResponseSchema,
  ListThreadsResponseSchema,
  SearchHitSchema,
  SearchMessagesResponseSchema,
  ThreadSummarySchema,
} from "@team-protocols/contract/team/v1/history_pb.js";
import type { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import { DomainError } from "../errors.js";
import type { Database } from "../store/database.js";
import type { Reader } from "../store/history-visibility.js";
import { SEARCH_WINDOW, searchMessages } from "../store/search.js";
import { catchUpSearch } from "../store/search-index.js";
import { listThreads, readThread } from "../store/threads.js";
import { toEnvelope } from "./convert.js";
import { keysetPage, pageSize, pageTokenPosition } from "./page-token.js";

type HistoryImpl = Pick<
  ServiceImpl<typeof TeamService>,
  "getThread" | "listThreads" | "searchMessages"
>;

const THREAD_PAGE = { page: 100, max: 1000 };
const THREADS_PAGE = { page: 50, max: 500 };
const SEARCH_PAGE = { page: 20, max: 100 };
/** How deep search pages go: as deep as the matches a search ranks (store/search.ts). */
const MAX_SEARCH_OFFSET = SEARCH_WINDOW;

/** What the caller reads in the history calls: the team for the lead and observers. */
export const readerOf = (caller: Caller): Reader => ({
  teamId: caller.teamId,
  memberId: caller.id,
  wholeTeam: caller.role === "lead" || caller.role === "observer",
});

/** GetThread, ListThreads, SearchMessages (docs/history.md). */
export function historyHandlers(deps: { db: Database }): HistoryImpl {
  const { db } = deps;
  return {
    async getThread(req, ctx) {
      const caller = requireCaller(ctx.values);
      const size = pageSize(req.pageSize, THREAD_PAGE);
      const after = pageTokenPosition(req.pageToken);
      const rows = await readThread(db, readerOf(caller), req.threadId, after, size + 1);
      // Nothing to read and no page token: the thread is unknown or none of it is the
      // caller's (the same answer either way, so ids of others' threads tell nothing).
      if (rows.length === 0 && after === undefined) {
        throw new DomainError(
          "not-found",
          `no thread "${req.threadId}" with messages you may read (ListThreads shows yours)`,
        );
      }
      const { page, nextPageToken } = keysetPage(rows, size, (m) => m.feedPosition);
      return create(GetThreadResponseSchema, {
        envelopes: page.map((m) => toEnvelope(caller.teamName, m)),
        nextPageToken,
      });
    },

    async listThreads(req, ctx) {
      const caller = requireCaller(ctx.values);
      const size = pageSize(req.pageSize, THREADS_PAGE);
      const before = pageTokenPosition(req.pageToken);
      // The threads' order is kept by the search indexer (migration 014): what the team
      // committed before this call is listed once its queue is indexed.
      await catchUpSearch(db, caller.teamId);
      const rows = await listThreads(db, readerOf(caller), before, size + 1);
      const { page, nextPageToken } = keysetPage(rows, size, (t) => t.lastPosition);
      return create(ListThreadsResponseSchema, {
        threads: page.map((t) =>
          create(ThreadSummarySchema, {
            threadId: t.threadId,
            first: toEnvelope(caller.teamName, t.first),
            latest: toEnvelope(caller.teamName, t.latest),
            messageCount: t.messageCount,
            lastActivity: timestampFromDate(t.latest.sentAt),
          }),
        ),
        nextPageToken,
      });
    },

    async searchMessages(req, ctx) {
      const caller = requireCaller(ctx.values);
      const size = pageSize(req.pageSize, SEARCH_PAGE);
      const offset = Number(pageTokenPosition(req.pageToken) ?? 0n);
      if (offset > MAX_SEARCH_OFFSET) {
        throw new DomainError("invalid-argument", "page_token is not one this server gave out");
      }
      // What the team committed before this call is searchable when it is answered: its
      // queue is indexed first (usually empty; migration 013 moved indexing off the send).
      await catchUpSearch(db, caller.teamId);
      const rows = await searchMessages(
        db,
        readerOf(caller),
        {
          query: req.query,
          from: req.from || undefined,
          to: req.to || undefined,
          kind: req.kind || undefined,
          since: req.since ? timestampDate(req.since) : undefined,
          until: req.until ? timestampDate(req.until) : undefined,
        },
        offset,
        size + 1,
      );
      const page = rows.slice(0, size);
      // The window holds the search's last hit: no row past it is fetched.
      const more = rows.length > size;
      return create(SearchMessagesResponseSchema, {
        hits: page.map((h) =>
          create(SearchHitSchema, {
            envelope: toEnvelope(caller.teamName, h.message),
            snippet: h.snippet,
            rank: h.rank,
          }),
        ),
        nextPageToken: more ? String(offset + size) : "",
      });
    },
  };
}
