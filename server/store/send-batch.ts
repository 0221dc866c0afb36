import { DomainError, RuleViolationError } from "../errors.js";
import type { Database } from "./database.js";
import { BROADCAST, type SendInput, type SendResult } from "./send.js";

/** A send the batch path takes: plain, no idempotency key, no protocol hooks. */
export type BatchableSend = Pick<SendInput, "teamId" | "sender" | "to" | "kind" | "body">;

export const isBatchable = (input: SendInput): boolean =>
  !input.messageId && !input.requestId && !input.beforeAppend && !input.beforeCommit;

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
    `WITH q AS (
       SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::bytea[])
         WITH ORDINALITY AS q (team_id, sender_id, from_name, to_name, kind, body, idx)
     ),
     recipients AS (
       SELECT q.idx, m.id AS member_id, m.name
       FROM q
       JOIN members s ON s.id = q.sender_id AND s.status = 'active'
       JOIN members m ON m.team_id = q.team_id AND m.status = 'active'
        AND CASE WHEN q.to_name = '*' THEN m.id <> q.sender_id ELSE m.name = q.to_name END
     ),
     counts AS (
       SELECT member_id, count(*) AS n FROM recipients GROUP BY member_id
     ),
     locked AS MATERIALIZED (
       SELECT member_id FROM inboxes WHERE member_id IN (SELECT member_id FROM counts)
       ORDER BY member_id FOR UPDATE
     ),
     bumped AS (
       UPDATE inboxes i SET last_seq = i.last_seq + c.n
       FROM counts c JOIN locked l USING (member_id)
       WHERE i.member_id = c.member_id
       RETURNING i.member_id, i.last_seq - c.n AS base
     ),
     numbered AS MATERIALIZED (
       SELECT r.idx, r.member_id, r.name,
              b.base + row_number() OVER (PARTITION BY r.member_id ORDER BY r.idx) AS seq
       FROM recipients r JOIN bumped b USING (member_id)
     ),
     stored AS (
       INSERT INTO messages (recipient_id, seq, team_id, sender_id, from_name, to_name, kind, body)
       SELECT n.member_id, n.seq, q.team_id, q.sender_id, q.from_name, q.to_name, q.kind, q.body
       FROM numbered n JOIN q USING (idx)
     )
     SELECT q.idx, s.status AS sender_status, t.status AS target_status,
            n.member_id, n.name, n.seq
     FROM q
     LEFT JOIN members s ON s.id = q.sender_id
     LEFT JOIN members t ON q.to_name <> '*' AND t.team_id = q.team_id AND t.name = q.to_name
     LEFT JOIN numbered n ON n.idx = q.idx
     ORDER BY q.idx, n.member_id`,
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
  for (const row of rows) {
    const i = Number(row.idx) - 1;
    const send = sends[i] as BatchableSend;
    const refusal = refusalOf(send, row.sender_status, row.target_status);
    if (refusal) {
      results[i] = refusal;
      continue;
    }
    if (row.member_id !== null && row.name !== null && row.seq !== null) {
      (results[i] as SendResult).deliveries.push({
        memberId: row.member_id,
        to: row.name,
        seq: row.seq,
      });
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
  if (senderStatus !== "active") {
    return new DomainError(
      "unauthenticated",
      `token revoked: member "${send.sender.name}" is stopped`,
    );
  }
  if (send.to !== BROADCAST && targetStatus !== "active") {
    return new RuleViolationError(
      "known-recipient",
      "not-found",
      targetStatus
        ? `"${send.to}" is stopped and receives no new messages`
        : `no member "${send.to}" in this team (ListMembers shows who is there)`,
      "to",
    );
  }
  return undefined;
}
