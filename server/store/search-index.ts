import type { Database } from "./database.js";
import { searchTextOf } from "./search-text.js";

/**
 * One step of the search indexer (migration 013): takes up to `batch` queued envelopes
 * (search_pending, oldest first), renders each one's words from a stored copy's body and
 * stores them in message_search, removing the queue rows in the same transaction. Returns
 * how many queue rows it took.
 *
 * With `teamId`, only that team's queue, and it waits for queue rows another indexer holds
 * (FOR UPDATE instead of SKIP LOCKED): once it returns less than `batch`, everything the
 * team had committed before the call is searchable. SearchMessages calls it so.
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
    }>(
      // set_config: synchronous_commit off for this transaction, in the same round trip.
      `SELECT p.id, p.envelope_id, p.team_id, c.body
       FROM (SELECT set_config('synchronous_commit', 'off', true)) sc,
            (SELECT id, envelope_id, team_id FROM search_pending
             WHERE $2::int IS NULL OR team_id = $2::int
             ORDER BY id LIMIT $1
             FOR UPDATE ${options.teamId === undefined ? "SKIP LOCKED" : ""}) p
       LEFT JOIN LATERAL (SELECT body FROM messages m WHERE m.envelope_id = p.envelope_id
                          LIMIT 1 FOR KEY SHARE) c ON true`,
      [options.batch, options.teamId ?? null],
    );
    if (rows.length === 0) return 0;
    const words = new Map<string, { teamId: number; text: string }>();
    for (const r of rows) {
      if (r.body && !words.has(r.envelope_id)) {
        words.set(r.envelope_id, { teamId: r.team_id, text: searchTextOf(r.body) });
      }
    }
    await tx.query(
      `WITH stored AS (
         INSERT INTO message_search (envelope_id, team_id, search_text)
         SELECT * FROM unnest($1::text[], $2::int[], $3::text[])
         ON CONFLICT (envelope_id) DO NOTHING
       )
       DELETE FROM search_pending WHERE id = ANY($4::bigint[])`,
      [
        [...words.keys()],
        [...words.values()].map((w) => w.teamId),
        [...words.values()].map((w) => w.text),
        rows.map((r) => r.id),
      ],
    );
    return rows.length;
  });
}

/** Indexes everything `teamId` has queued (see indexPendingSearch): SearchMessages' first step. */
export async function catchUpSearch(db: Database, teamId: number): Promise<void> {
  const batch = 1000;
  while ((await indexPendingSearch(db, { batch, teamId })) === batch) {}
}
