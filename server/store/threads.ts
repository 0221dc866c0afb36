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

/**
 * The SQL condition on `messages m` for the rows of thread `id`, in the form its two indexes
 * serve (migration 013): its root by messages_envelope, the rest by the partial
 * messages_thread, which holds only rows whose thread is not their own envelope.
 */
const inThread = (id: string) =>
  `m.thread_id = ${id} AND (m.envelope_id = ${id} OR m.thread_id <> m.envelope_id)`;

/**
 * The thread of a message `reader` may read, by its envelope id (Send's reply_to); undefined
 * when there is none: unknown, of another team, or not the reader's to read.
 */
export async function threadOfVisible(
  db: Queryable,
  reader: Reader,
  envelopeId: string,
): Promise<string | undefined> {
  const [row] = await db.query<{ thread_id: string }>(
    `SELECT m.thread_id FROM messages m WHERE m.envelope_id = $4 AND ${VISIBLE} LIMIT 1`,
    [...readerParams(reader), envelopeId],
  );
  return row?.thread_id;
}

/**
 * The messages of a thread the reader may read, one copy each, oldest first, after the one
 * at feed position `after`; at most `limit`.
 */
export async function readThread(
  db: Queryable,
  reader: Reader,
  threadId: string,
  after: bigint | undefined,
  limit: number,
): Promise<HistoryMessage[]> {
  const rows = await db.query<HistorySqlRow>(
    `SELECT * FROM (
       SELECT DISTINCT ON (m.envelope_id) ${ENVELOPE_COLUMNS}
       FROM messages m WHERE ${inThread("$4")} AND ${VISIBLE}
       ORDER BY ${ONE_COPY}
     ) t
     WHERE $5::bigint IS NULL OR feed_position > $5::bigint
     ORDER BY feed_position LIMIT $6`,
    [...readerParams(reader), threadId, after ?? null, limit],
  );
  return rows.map(toHistoryMessage);
}

export interface ThreadRow {
  threadId: string;
  first: HistoryMessage;
  latest: HistoryMessage;
  messageCount: number;
  /** The feed position of its newest message: the page token. */
  lastPosition: bigint;
}

/**
 * The threads the reader may read, the most recently active first (by the feed position of
 * their newest message the reader may read), below feed position `before`; at most `limit`.
 * The order comes from thread_activity (migration 014: each thread's newest position per
 * reader, kept by the search indexer; the caller catches its team's queue up first), walked
 * through its index, so a page reads `limit` threads, not the team; what each thread shows
 * (its ends, its count) is read from the messages under VISIBLE, as GetThread reads them.
 */
export async function listThreads(
  db: Queryable,
  reader: Reader,
  before: bigint | undefined,
  limit: number,
): Promise<ThreadRow[]> {
  const rows = await db.query<
    HistorySqlRow & { which: "first" | "latest"; message_count: number; last_position: bigint }
  >(
    // Copies of a broadcast have positions of their own; the thread's first position is
    // taken over the reader's copies and it is counted per envelope.
    `WITH recent AS (
       SELECT a.thread_id, a.last_position FROM thread_activity a
       WHERE a.team_id = $1 AND a.reader_id = CASE WHEN $3::boolean THEN 0 ELSE $2::int END
         AND a.last_position < COALESCE($4::bigint, 9223372036854775807)
       ORDER BY a.last_position DESC LIMIT $5
     ),
     threads AS (
       SELECT r.thread_id, r.last_position, s.first_position, s.message_count
       FROM recent r
       CROSS JOIN LATERAL (
         SELECT min(m.feed_position) AS first_position,
                count(DISTINCT m.envelope_id)::int AS message_count
         FROM messages m WHERE ${inThread("r.thread_id")} AND ${VISIBLE}
       ) s
       WHERE s.message_count > 0
     )
     SELECT t.last_position, t.message_count, ends.which, e.*
     FROM threads t
     CROSS JOIN LATERAL (VALUES ('first', t.first_position), ('latest', t.last_position))
       AS ends (which, position)
     -- Lateral, so each end is found through the thread's indexes (no index leads with
     -- feed_position).
     CROSS JOIN LATERAL (
       SELECT ${ENVELOPE_COLUMNS} FROM messages m
       WHERE m.team_id = $1 AND ${inThread("t.thread_id")} AND m.feed_position = ends.position
       LIMIT 1
     ) e
     ORDER BY t.last_position DESC, ends.which`,
    [...readerParams(reader), before ?? null, limit],
  );
  const threads: ThreadRow[] = [];
  for (const row of rows) {
    const message = toHistoryMessage(row);
    if (row.which === "first") {
      threads.push({
        threadId: row.thread_id,
        first: message,
        latest: message,
        messageCount: row.message_count,
        lastPosition: row.last_position,
      });
    } else {
      const thread = threads.at(-1);
      if (thread) thread.latest = message;
    }
  }
  return threads;
}
