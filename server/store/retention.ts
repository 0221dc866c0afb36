import type { Database } from "./database.js";

/**
 * The statements of the retention job: each deletes at most `limit` rows older than a
 * cutoff and returns how many it deleted, so the job works in short transactions and
 * never holds locks on a large table for long.
 */

/**
 * Acked messages sent before `cutoff`. Unacked ones are kept whatever their age: nothing
 * is deleted that its recipient has not consumed. Found inbox by inbox through the primary
 * key (recipient_id, seq), from the oldest, up to the recipient's ack cursor, so the
 * hot insert path pays for no extra index.
 */
export async function deleteAckedMessages(db: Database, cutoff: Date, limit: number) {
  const rows = await db.query<{ n: number }>(
    `WITH doomed AS (
       SELECT m.recipient_id, m.seq
       FROM members mb
       CROSS JOIN LATERAL (
         SELECT recipient_id, seq FROM messages
         WHERE recipient_id = mb.id AND seq <= mb.acked_seq AND sent_at < $1
         ORDER BY seq LIMIT $2
       ) m
       LIMIT $2
     ), gone AS (
       DELETE FROM messages USING doomed
       WHERE messages.recipient_id = doomed.recipient_id AND messages.seq = doomed.seq
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, limit],
  );
  return rows[0]?.n ?? 0;
}

/** Request records that left pending before `cutoff` (pending ones are never deleted). */
export async function deleteFinishedRequests(db: Database, cutoff: Date, limit: number) {
  const rows = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM requests WHERE id IN (
         SELECT id FROM requests
         WHERE status <> 'pending' AND resolved_at < $1
         ORDER BY resolved_at LIMIT $2)
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, limit],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Idempotency keys (message_id) recorded before `cutoff`: a retry after that is a new send.
 */
export async function deleteOldSends(db: Database, cutoff: Date, limit: number) {
  const rows = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM sends WHERE (sender_id, message_id) IN (
         SELECT sender_id, message_id FROM sends
         WHERE created_at < $1 ORDER BY created_at LIMIT $2)
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, limit],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Member events (WatchTeam's member changes, migration 006) recorded before `cutoff`, by the
 * index on `at`. Nothing reads a member's state from them (ListMembers reads `members`),
 * so a feed from an old cursor only starts later.
 */
export async function deleteOldMemberEvents(db: Database, cutoff: Date, limit: number) {
  const rows = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM member_events WHERE feed_position IN (
         SELECT feed_position FROM member_events WHERE at < $1 ORDER BY at LIMIT $2)
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, limit],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Task events (WatchTeam's task changes, migration 008) recorded before `cutoff`, by the index
 * on `at`. Tasks are read from their rows (GetTask, ListTasks), never from their events, so
 * a feed from an old cursor only starts later.
 */
export async function deleteOldTaskEvents(db: Database, cutoff: Date, limit: number) {
  const rows = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM task_events WHERE feed_position IN (
         SELECT feed_position FROM task_events WHERE at < $1 ORDER BY at LIMIT $2)
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [cutoff, limit],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Journal lines written before `cutoff`. The journal's trigger refuses every DELETE except
 * in a transaction that set team_protocols.retention (migration 004): this one.
 */
export async function deleteOldAttempts(db: Database, cutoff: Date, limit: number) {
  return db.transaction(async (tx) => {
    await tx.query("SELECT set_config('team_protocols.retention', 'on', true)");
    const rows = await tx.query<{ n: number }>(
      `WITH gone AS (
         DELETE FROM protocol_attempts WHERE id IN (
           SELECT id FROM protocol_attempts WHERE at < $1 ORDER BY at LIMIT $2)
         RETURNING 1
       )
       SELECT count(*)::int AS n FROM gone`,
      [cutoff, limit],
    );
    return rows[0]?.n ?? 0;
  });
}
