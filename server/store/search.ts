import type { Queryable } from "./database.js";
import {
  ENVELOPE_COLUMNS,
  type HistoryMessage,
  type HistorySqlRow,
  ONE_COPY,
  type Reader,
  readerParams,
  toHistoryMessage,
  VISIBLE,
} from "./history-visibility.js";

export interface SearchFilter {
  query: string;
  from?: string | undefined;
  to?: string | undefined;
  kind?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

export interface SearchHitRow {
  message: HistoryMessage;
  snippet: string;
  rank: number;
}

/**
 * Full-text search over the messages the reader may read (message_search, one row of words
 * per envelope under a GIN index, migration 013; visibility from the copies it joins), one
 * copy of each, best rank first then newest; the page at `offset`. The
 * query is read as a web search (websearch_to_tsquery never fails on operators or odd
 * punctuation); a query of stop words only matches nothing. Snippets are made for the page
 * only: ts_headline re-parses the text, the costly part of a search.
 */
export async function searchMessages(
  db: Queryable,
  reader: Reader,
  filter: SearchFilter,
  offset: number,
  limit: number,
): Promise<SearchHitRow[]> {
  const rows = await db.query<HistorySqlRow & { snippet: string; rank: number }>(
    `WITH q AS (SELECT websearch_to_tsquery('english', $4) AS q),
     hits AS (
       SELECT DISTINCT ON (m.envelope_id) ${ENVELOPE_COLUMNS}, s.search_text,
              ts_rank(s.search, q.q) AS rank
       FROM message_search s, q, messages m
       WHERE s.search @@ q.q AND s.team_id = $1 AND m.envelope_id = s.envelope_id AND ${VISIBLE}
         AND ($5::text IS NULL OR m.from_name = $5)
         AND ($6::text IS NULL OR m.to_name = $6)
         AND ($7::text IS NULL OR m.kind = $7)
         AND ($8::timestamptz IS NULL OR m.sent_at >= $8)
         AND ($9::timestamptz IS NULL OR m.sent_at < $9)
       ORDER BY ${ONE_COPY}
     ),
     page AS (
       SELECT * FROM hits ORDER BY rank DESC, feed_position DESC OFFSET $10 LIMIT $11
     )
     SELECT page.*, ts_headline('english', page.search_text, q.q,
              'StartSel=«, StopSel=», MaxWords=30, MinWords=8, MaxFragments=2') AS snippet
     FROM page, q
     ORDER BY page.rank DESC, page.feed_position DESC`,
    [
      ...readerParams(reader),
      filter.query,
      filter.from ?? null,
      filter.to ?? null,
      filter.kind ?? null,
      filter.since ?? null,
      filter.until ?? null,
      offset,
      limit,
    ],
  );
  return rows.map((r) => ({ message: toHistoryMessage(r), snippet: r.snippet, rank: r.rank }));
}
