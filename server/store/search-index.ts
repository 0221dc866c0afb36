import type { Database, Transaction } from "./database.js";
import { searchTextOf } from "./search-text.js";

/**
 * One step of the search indexer (migrations 013 and 014): takes up to `batch` queued
 * envelopes (search_pending, oldest first), renders each one's words from a stored copy's
 * body (a copy in the queue row's team) and stores them in message_search with that copy's
 * feed position, notes their threads' activity (thread_activity), and removes the queue
 * rows, in one transaction. Returns how many queue rows it took.
 *
 * With `teamId`, only that team's queue, and it waits for queue rows another indexer holds
 * (FOR UPDATE instead of SKIP LOCKED): once it returns less than `batch`, everything the
 * team had committed before the call is searchable and listed. SearchMessages and
 * ListThreads call it so.
 *
 * The copy read is locked (FOR KEY SHARE) until commit, so retention or DeleteTeam cannot
 * remove the envelope's last copy between the read and the insert and leave words behind;
 * an envelope with no copy left (deleted before it was indexed) is only dequeued. The
 * transaction does not wait for its WAL flush (synchronous_commit off): the index is
 * derived, and a crash that loses the commit loses the dequeue with it, so the envelope is
 * indexed again.
 */
export async function indexPendingSearch(
  db: Database,
  options: { batch: number; teamId?: number },
): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await tx.query<{
      id: bigint;
      envelope_id: string;
      team_id: number;
      body: Uint8Array | null;
      feed_position: bigint | null;
    }>(
      // set_config: synchronous_commit off for this transaction, in the same round trip.
      // The copy is the envelope's in the queue row's team: a copy of a team on the same
      // server holds the same envelope ids (migration 014).
      // A copy is found by its envelope id alone, its team only compared (`team_id + 0`, which
      // no index serves): with statistics taken while the team had few messages (a new team,
      // inboxes just acked), the planner joined `messages_feed`'s entries for the whole team
      // to each envelope's, reading every message of the team per envelope: under a burst of
      // sends a batch took 300-550 ms instead of about 10 and the index fell tens of seconds
      // behind (bench/README.md). An envelope has at most a copy per member.
      `SELECT p.id, p.envelope_id, p.team_id, c.body, c.feed_position
       FROM (SELECT set_config('synchronous_commit', 'off', true)) sc,
            (SELECT id, envelope_id, team_id FROM search_pending
             WHERE $2::int IS NULL OR team_id = $2::int
             ORDER BY id LIMIT $1
             FOR UPDATE ${options.teamId === undefined ? "SKIP LOCKED" : ""}) p
       LEFT JOIN LATERAL (SELECT body, feed_position FROM messages m
                          WHERE m.envelope_id = p.envelope_id AND m.team_id + 0 = p.team_id
                          LIMIT 1 FOR KEY SHARE) c ON true`,
      [options.batch, options.teamId ?? null],
    );
    if (rows.length === 0) return 0;
    const words = new Map<
      string,
      { envelopeId: string; teamId: number; position: bigint; text: string }
    >();
    for (const r of rows) {
      const key = `${r.team_id}:${r.envelope_id}`;
      if (r.body && r.feed_position !== null && !words.has(key)) {
        words.set(key, {
          envelopeId: r.envelope_id,
          teamId: r.team_id,
          position: r.feed_position,
          text: searchTextOf(r.body),
        });
      }
    }
    const found = [...words.values()];
    await tx.query(
      `WITH stored AS (
         INSERT INTO message_search (envelope_id, team_id, position, search_text)
         SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[])
         ON CONFLICT (team_id, envelope_id) DO NOTHING
       )
       DELETE FROM search_pending WHERE id = ANY($5::bigint[])`,
      [
        found.map((w) => w.envelopeId),
        found.map((w) => w.teamId),
        found.map((w) => w.position.toString()),
        found.map((w) => w.text),
        rows.map((r) => r.id),
      ],
    );
    if (found.length > 0) await noteThreadActivity(tx, found);
    return rows.length;
  });
}

/**
 * The envelopes' threads as each reader sees them (thread_activity, migration 014): every
 * copy's position for the whole team (reader 0), its recipient and its sender. The rows are
 * taken in key order, so two indexers (two server processes) never wait on each other in a
 * cycle.
 */
async function noteThreadActivity(
  tx: Transaction,
  envelopes: readonly { envelopeId: string; teamId: number }[],
): Promise<void> {
  await tx.query(
    `INSERT INTO thread_activity (team_id, reader_id, thread_id, last_position)
     SELECT m.team_id, r.reader_id, m.thread_id, max(m.feed_position)
     FROM unnest($1::text[], $2::int[]) e (envelope_id, team_id)
     -- team_id + 0: by envelope id alone, as the read of the batch (indexPendingSearch).
     JOIN messages m ON m.envelope_id = e.envelope_id AND m.team_id + 0 = e.team_id
     CROSS JOIN LATERAL (VALUES (0), (m.recipient_id), (m.sender_id)) r (reader_id)
     WHERE r.reader_id IS NOT NULL
     GROUP BY 1, 2, 3
     ORDER BY 1, 2, 3
     ON CONFLICT (team_id, reader_id, thread_id) DO UPDATE
       SET last_position = GREATEST(thread_activity.last_position, EXCLUDED.last_position)`,
    [envelopes.map((e) => e.envelopeId), envelopes.map((e) => e.teamId)],
  );
}

/**
 * Indexes everything `teamId` has queued (see indexPendingSearch): the first step of
 * SearchMessages and ListThreads, which read what the indexer keeps.
 */
export async function catchUpSearch(db: Database, teamId: number): Promise<void> {
  const batch = 1000;
  while ((await indexPendingSearch(db, { batch, teamId })) === batch) {}
}
