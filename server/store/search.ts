import type { Queryable } from "./database.js";
import {
  ENVELOPE_COLUMNS,
  type HistoryMessage,
  type HistorySqlRow,
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
 * How many matches a search ranks: the newest this many the reader may read (after the
 * filters). Ranking reads every match it ranks (ts_rank over its tsvector) and joins it to
 * the reader's copy, so a word in a third of a million messages took seconds when every
 * match was ranked. Pages go no deeper than this either (docs/history.md).
 */
export const SEARCH_WINDOW = 1_000;

/** The filters of a search on `messages m`, parameters $5 to $9. */
const FILTERS = `($5::text IS NULL OR m.from_name = $5)
  AND ($6::text IS NULL OR m.to_name = $6)
  AND ($7::text IS NULL OR m.kind = $7)
  AND ($8::timestamptz IS NULL OR m.sent_at >= $8)
  AND ($9::timestamptz IS NULL OR m.sent_at < $9)`;

/**
 * Full-text search over the messages the reader may read (message_search, one row of words
 * per envelope and team under a GIN index, migrations 013 and 014; visibility from the
 * copies it joins), one copy of each (the reader's own when it has one): of the newest
 * `window` matches, the best rank first then newest; the page at `offset`. The query is
 * read as a web search (websearch_to_tsquery never fails on operators or odd punctuation);
 * a query of stop words only matches nothing. Snippets and copies are read for the page
 * only: ts_headline re-parses the text, the costly part of a search.
 */
export async function searchMessages(
  db: Queryable,
  reader: Reader,
  filter: SearchFilter,
  offset: number,
  limit: number,
  window: number = SEARCH_WINDOW,
): Promise<SearchHitRow[]> {
  const rows = await db.query<HistorySqlRow & { snippet: string; rank: number }>(
    `WITH q AS (SELECT websearch_to_tsquery('english', $4) AS q),
     -- The matches by the GIN index, then the newest: sorting them by position costs little
     -- next to ranking them (position + 0: never an index walk by position stopping at the
     -- window, which the planner chose for middling words and phrases too, far rarer than it
     -- thought; bench/README.md, so migration 014 has no such index). The lead and observers without filters may read every match
     -- (a team's words have a copy in the team), so the copies are not looked up then.
     newest AS (
       SELECT s.envelope_id, s.position, s.search
       FROM message_search s, q
       WHERE s.team_id = $1 AND s.search @@ q.q
         AND (($3::boolean AND $5::text IS NULL AND $6::text IS NULL AND $7::text IS NULL
               AND $8::timestamptz IS NULL AND $9::timestamptz IS NULL)
              OR EXISTS (SELECT 1 FROM messages m
                         WHERE m.envelope_id = s.envelope_id AND ${VISIBLE} AND ${FILTERS}))
       ORDER BY s.position + 0 DESC LIMIT $12
     ),
     page AS (
       SELECT n.envelope_id, n.position, ts_rank(n.search, q.q) AS rank
       FROM newest n, q
       ORDER BY rank DESC, n.position DESC OFFSET $10 LIMIT $11
     )
     SELECT c.*, page.rank,
            ts_headline('english', s.search_text, q.q,
              'StartSel=«, StopSel=», MaxWords=30, MinWords=8, MaxFragments=2') AS snippet
     FROM page
     CROSS JOIN q
     JOIN message_search s ON s.team_id = $1 AND s.envelope_id = page.envelope_id
     CROSS JOIN LATERAL (
       SELECT ${ENVELOPE_COLUMNS} FROM messages m
       WHERE m.envelope_id = page.envelope_id AND ${VISIBLE} AND ${FILTERS}
       ORDER BY (m.recipient_id = $2) DESC, m.recipient_id LIMIT 1
     ) c
     ORDER BY page.rank DESC, page.position DESC`,
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
      window,
    ],
  );
  return rows.map((r) => ({ message: toHistoryMessage(r), snippet: r.snippet, rank: r.rank }));
}
