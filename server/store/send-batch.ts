import { BROADCAST } from "../domain/names.js";
import type { Database } from "./database.js";
import { revokedSender, type SendInput, type SendResult, unknownRecipient } from "./send.js";

/** A send the batch path takes: plain, no idempotency key, no protocol hooks (sender.ts). */
export type BatchableSend = Pick<SendInput, "teamId" | "sender" | "to" | "kind" | "body">;

/**
 * Stores many sends with ONE statement, which is its own transaction: one round trip and
 * one commit (one WAL flush) for the whole batch, whatever its size. Concurrent senders
 * share it: that is what lifts the hot inbox (a whole team reporting to its lead) past one
 * commit per message.
 *
 * In that statement: the senders are checked (still active: a token revoked on another
 * server process a moment ago may still be in this one's caller cache), the recipients
 * resolved (a name, or "*" for every other active member), the inbox rows locked in
 * member-id order (so concurrent batches and sends cannot deadlock), each inbox's seqs
 * taken with one UPDATE and every row inserted with one INSERT. Per inbox, seqs follow the
 * order of the batch, which is the order the sends arrived in. A send that fails a rule
 * (revoked sender, unknown or stopped recipient) stores nothing and fails alone.
 */
export async function sendBatch(
  db: Database,
  sends: BatchableSend[],
): Promise<(SendResult | Error)[]> {
  const rows = await db.query<{
    idx: bigint;
    sender_status: string | null;
    target_status: string | null;
    member_id: number | null;
    name: string | null;
    seq: bigint | null;
  }>(
    // No two CTEs are joined on a key: their row estimates are guesses (a fresh team's
    // broadcast is estimated at one row and gets 1,000), and a nested loop over two CTE
    // scans is quadratic (measured: 185 ms instead of 15 for a broadcast to 1,000). Rows
    // carry the batch index instead, and the message fields come from the parameter arrays
    // by that index.
    `WITH q AS (
       SELECT * FROM unnest($1::int[], $2::int[], $4::text[])
         WITH ORDINALITY AS q (team_id, sender_id, to_name, idx)
     ),
     checks AS (
       SELECT q.idx, s.status AS sender_status, t.status AS target_status
       FROM q
       LEFT JOIN members s ON s.id = q.sender_id
       LEFT JOIN members t ON q.to_name <> '*' AND t.team_id = q.team_id AND t.name = q.to_name
     ),
     recipients AS (
       SELECT q.idx, m.id AS member_id, m.name
       FROM q
       JOIN members s ON s.id = q.sender_id AND s.status = 'active'
       JOIN members m ON m.team_id = q.team_id AND m.name = q.to_name AND m.status = 'active'
       WHERE q.to_name <> '*'
       UNION ALL
       SELECT q.idx, m.id, m.name
       FROM q
       JOIN members s ON s.id = q.sender_id AND s.status = 'active'
       JOIN members m ON m.team_id = q.team_id AND m.status = 'active' AND m.id <> q.sender_id
       WHERE q.to_name = '*'
     ),
     per_inbox AS (
       SELECT member_id, min(name) AS name, array_agg(idx ORDER BY idx) AS idxs
       FROM recipients GROUP BY member_id
     ),
     locked AS MATERIALIZED (
       SELECT member_id FROM inboxes
       WHERE member_id = ANY (ARRAY(SELECT member_id FROM per_inbox))
       ORDER BY member_id FOR UPDATE
     ),
     bumped AS (
       UPDATE inboxes i SET last_seq = i.last_seq + cardinality(p.idxs)
       FROM per_inbox p
       -- Every inbox row is locked, in member-id order, before the first one is updated.
       WHERE i.member_id = p.member_id AND (SELECT count(*) FROM locked) >= 0
       RETURNING i.member_id, p.name, p.idxs, i.last_seq - cardinality(p.idxs) AS base
     ),
     numbered AS MATERIALIZED (
       SELECT u.idx, b.member_id, b.name, b.base + u.k AS seq
       FROM bumped b, unnest(b.idxs) WITH ORDINALITY AS u (idx, k)
     ),
     stored AS (
       INSERT INTO messages (recipient_id, seq, team_id, sender_id, from_name, to_name, kind, body)
       SELECT n.member_id, n.seq, ($1::int[])[n.idx::int], ($2::int[])[n.idx::int],
              ($3::text[])[n.idx::int], ($4::text[])[n.idx::int], ($5::text[])[n.idx::int],
              ($6::bytea[])[n.idx::int]
       FROM numbered n
     )
     SELECT idx, sender_status, target_status,
            NULL::int AS member_id, NULL::text AS name, NULL::bigint AS seq
     FROM checks
     UNION ALL
     SELECT idx, NULL, NULL, member_id, name, seq FROM numbered
     ORDER BY idx, member_id NULLS FIRST`,
    [
      sends.map((s) => s.teamId),
      sends.map((s) => s.sender.id),
      sends.map((s) => s.sender.name),
      sends.map((s) => s.to),
      sends.map((s) => s.kind),
      sends.map((s) => s.body),
    ],
  );
  const results: (SendResult | Error)[] = sends.map(() => ({
    deliveries: [],
    replayed: false,
    requestId: "",
  }));
  // Per send: its checks row first, then its deliveries in member-id order.
  for (const row of rows) {
    const i = Number(row.idx) - 1;
    const result = results[i] as SendResult | Error;
    if (row.member_id === null) {
      results[i] =
        refusalOf(sends[i] as BatchableSend, row.sender_status, row.target_status) ?? result;
    } else if (!(result instanceof Error) && row.name !== null && row.seq !== null) {
      result.deliveries.push({ memberId: row.member_id, to: row.name, seq: row.seq });
    }
  }
  return results;
}

/** Why a send of the batch stored nothing, if it broke a rule. */
function refusalOf(
  send: BatchableSend,
  senderStatus: string | null,
  targetStatus: string | null,
): Error | undefined {
  if (senderStatus !== "active") return revokedSender(send.sender.name);
  if (send.to !== BROADCAST && targetStatus !== "active") {
    return unknownRecipient(send.to, targetStatus !== null);
  }
  return undefined;
}
