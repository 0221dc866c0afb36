import { PLAN_EACH_CALL, type Queryable } from "./database.js";
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
 * Up to how many matches in the team a search checks the reader's copy of each match by its
 * envelope id (an index probe each); past that, it reads the reader's copies once into a hash
 * (what the planner chose for every teammate's search, since it cannot estimate a word's
 * matches: a rare word as a teammate took about 50 ms at 300,000 messages for a handful of
 * matches, and grows with the reader's history; bench/README.md). A probe costs about a
 * hundredth of a millisecond, the hash about a millisecond per thousand copies.
 */
export const PROBE_MATCHES = 1_000;

/**
 * Full-text search over the messages the reader may read (message_search, one row of words
 * per envelope and team under a GIN index, migrations 013 and 014; visibility from the
 * copies it joins), one copy of each (the reader's own when it has one): of the newest
 * `window` matches, the best rank first then newest; the page at `offset`. The query is
 * read as a web search (websearch_to_tsquery never fails on operators or odd punctuation);
 * a query of stop words only matches nothing. Snippets and copies are read for the page
 * only: ts_headline re-parses the text, the costly part of a search.
 *
 * The lead and observers without filters may read every match (a team's words have a copy
 * in the team), so no copy is looked up before the page. Otherwise each match needs one of
 * the reader's copies: when the team has at most `probeMatches` matches (counted first, up to
 * one more) each is checked by its envelope id, else the reader's copies are hashed once.
 */
export async function searchMessages(
  db: Queryable,
  reader: Reader,
  filter: SearchFilter,
  offset: number,
  limit: number,
  window: number = SEARCH_WINDOW,
  probeMatches: number = PROBE_MATCHES,
): Promise<SearchHitRow[]> {
  const filtered =
    filter.from !== undefined ||
    filter.to !== undefined ||
    filter.kind !== undefined ||
    filter.since !== undefined ||
    filter.until !== undefined;
  const copies =
    !reader.wholeTeam || filtered ? await copyCheck(db, reader, filter, probeMatches) : "none";
  const rows = await db.query<HistorySqlRow & { snippet: string; rank: number }>(
    `${PLAN_EACH_CALL} WITH q AS (SELECT websearch_to_tsquery('english', $4) AS q),
     -- The matches by the GIN index, then the newest: sorting them by position costs little
     -- next to ranking them (position + 0: never an index walk by position stopping at the
     -- window, which the planner chose for middling words and phrases too, far rarer than it
     -- thought; bench/README.md, so migration 014 has no such index).
     newest AS (
       SELECT s.envelope_id, s.position, s.search
       FROM q, message_search s${COPY_CHECKS[copies]}
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

/**
 * How `newest` keeps only the matches the reader may read (each a statement of its own, so
 * each is planned for its shape): all of them (the whole team, no filters); one of the
 * reader's copies probed per match (a LATERAL with LIMIT 1, which the planner cannot turn
 * into a hash of every copy); or every copy the reader may read hashed once and each match
 * looked up in it. That last is an EXISTS under an OR: PostgreSQL turns an EXISTS it finds
 * among the ANDs of a WHERE into a semi-join, which it ran as a probe per match (118,000
 * probes, 600 ms, for a word in 118,000 of 300,000 messages), and keeps one under an OR a
 * subplan, which it hashes (about 100 ms).
 */
const COPY_CHECKS = {
  none: `
       WHERE s.team_id = $1 AND s.search @@ q.q`,
  probe: `
       CROSS JOIN LATERAL (SELECT 1 FROM messages m
                           WHERE m.envelope_id = s.envelope_id AND ${VISIBLE} AND ${FILTERS}
                           LIMIT 1) copy
       WHERE s.team_id = $1 AND s.search @@ q.q`,
  hash: `
       WHERE s.team_id = $1 AND s.search @@ q.q
         AND (false OR EXISTS (SELECT 1 FROM messages m
                               WHERE m.envelope_id = s.envelope_id AND ${VISIBLE} AND ${FILTERS}))`,
} as const;

/** Probe when the team has at most `probeMatches` matches (counted up to one more). */
async function copyCheck(
  db: Queryable,
  reader: Reader,
  filter: SearchFilter,
  probeMatches: number,
): Promise<"probe" | "hash"> {
  const [row] = await db.query<{ matches: number }>(
    `${PLAN_EACH_CALL} SELECT count(*)::int AS matches FROM (
       SELECT 1 FROM message_search s
       WHERE s.team_id = $1 AND s.search @@ websearch_to_tsquery('english', $2)
       LIMIT $3) m`,
    [reader.teamId, filter.query, probeMatches + 1],
  );
  return (row?.matches ?? 0) <= probeMatches ? "probe" : "hash";
}
