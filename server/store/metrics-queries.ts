import type { Queryable } from "./database.js";

/**
 * Unacked messages over all inboxes, and in the fullest one, for /metrics. Seqs are gap-free
 * per inbox, so an inbox's backlog is its last seq minus its ack cursor: one pass over
 * inboxes and members (a row each), no scan of the messages themselves.
 */
export async function inboxBacklog(db: Queryable): Promise<{ total: number; max: number }> {
  const [row] = await db.query<{ total: bigint | null; max: bigint | null }>(
    `SELECT sum(i.last_seq - m.acked_seq)::bigint AS total, max(i.last_seq - m.acked_seq) AS max
     FROM inboxes i JOIN members m ON m.id = i.member_id`,
  );
  return { total: Number(row?.total ?? 0n), max: Number(row?.max ?? 0n) };
}

/**
 * Protocol requests by status, for /metrics. A pending request past its deadline counts as
 * expired, as every read of it says (the sweeper records it moments later).
 */
export async function requestsByStatus(db: Queryable): Promise<Record<string, number>> {
  const rows = await db.query<{ status: string; n: bigint }>(
    `SELECT CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END
              AS status,
            count(*) AS n
     FROM requests GROUP BY 1`,
  );
  const out: Record<string, number> = {
    pending: 0,
    approved: 0,
    rejected: 0,
    expired: 0,
    canceled: 0,
  };
  for (const r of rows) out[r.status] = Number(r.n);
  return out;
}
