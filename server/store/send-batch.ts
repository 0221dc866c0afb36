import { RuleViolationError } from "../errors.js";
import type { Database, Queryable } from "./database.js";
import { BROADCAST, type Delivery, type SendInput, type SendResult } from "./send.js";

/** A send the batch path takes: plain, no idempotency key, no protocol hooks. */
export type BatchableSend = Pick<SendInput, "teamId" | "sender" | "to" | "kind" | "body">;

export const isBatchable = (input: SendInput): boolean =>
  !input.messageId && !input.requestId && !input.beforeAppend && !input.beforeCommit;

/**
 * Stores many sends in ONE transaction with a fixed number of statements, whatever the
 * batch size: recipients resolved in one query, every inbox's seqs taken in one UPDATE
 * (inbox rows locked in member-id order, so concurrent batches cannot deadlock), every row
 * inserted in one INSERT. Concurrent senders share one commit, and so one WAL flush: that
 * is what lifts the hot inbox (a whole team reporting to its lead) past one commit per
 * message. A send that fails a rule (known-recipient) fails alone; the others go on.
 * Per inbox, seqs follow the order of the batch, which is the order the sends arrived in.
 */
export async function sendBatch(
  db: Database,
  sends: BatchableSend[],
): Promise<(SendResult | Error)[]> {
  return db.transaction(async (tx) => {
    const results: (SendResult | Error)[] = sends.map(() => ({
      deliveries: [],
      replayed: false,
      requestId: "",
    }));
    const recipients = await resolveAll(tx, sends, results);
    const deliveries = await allocateSeqs(tx, recipients);
    await insertAll(tx, sends, deliveries);
    for (const d of deliveries) (results[d.send] as SendResult).deliveries.push(d.delivery);
    return results;
  });
}

interface Recipient {
  send: number;
  memberId: number;
  name: string;
}

// One query for every addressee of the batch: a name, or "*" (every other active member).
async function resolveAll(
  tx: Queryable,
  sends: BatchableSend[],
  results: (SendResult | Error)[],
): Promise<Recipient[]> {
  const rows = await tx.query<{ idx: bigint; id: number; name: string; status: string }>(
    `SELECT q.idx, m.id, m.name, m.status
     FROM unnest($1::int[], $2::int[], $3::text[]) WITH ORDINALITY AS q (team_id, sender_id, to_name, idx)
     JOIN members m ON m.team_id = q.team_id
      AND CASE WHEN q.to_name = '*' THEN m.status = 'active' AND m.id <> q.sender_id
               ELSE m.name = q.to_name END
     ORDER BY q.idx, m.id`,
    [sends.map((s) => s.teamId), sends.map((s) => s.sender.id), sends.map((s) => s.to)],
  );
  const found = new Map<number, { id: number; name: string; status: string }[]>();
  for (const r of rows) {
    const i = Number(r.idx) - 1;
    found.set(i, [...(found.get(i) ?? []), r]);
  }
  const recipients: Recipient[] = [];
  sends.forEach((send, i) => {
    const matches = found.get(i) ?? [];
    if (send.to !== BROADCAST && matches[0]?.status !== "active") {
      results[i] = new RuleViolationError(
        "known-recipient",
        "not-found",
        matches[0]
          ? `"${send.to}" is stopped and receives no new messages`
          : `no member "${send.to}" in this team (ListMembers shows who is there)`,
        "to",
      );
      return;
    }
    for (const m of matches) recipients.push({ send: i, memberId: m.id, name: m.name });
  });
  return recipients;
}

// Takes n seqs from each inbox in one statement; hands them out in batch order.
async function allocateSeqs(
  tx: Queryable,
  recipients: Recipient[],
): Promise<{ send: number; delivery: Delivery }[]> {
  if (recipients.length === 0) return [];
  const counts = new Map<number, number>();
  for (const r of recipients) counts.set(r.memberId, (counts.get(r.memberId) ?? 0) + 1);
  const ids = [...counts.keys()];
  const rows = await tx.query<{ member_id: number; last_seq: bigint }>(
    `UPDATE inboxes i SET last_seq = i.last_seq + c.n
     FROM (SELECT member_id FROM inboxes WHERE member_id = ANY($1::int[])
           ORDER BY member_id FOR UPDATE) locked
     JOIN unnest($1::int[], $2::int[]) AS c (member_id, n) USING (member_id)
     WHERE i.member_id = c.member_id
     RETURNING i.member_id, i.last_seq`,
    [ids, ids.map((id) => counts.get(id))],
  );
  const next = new Map<number, bigint>();
  for (const r of rows)
    next.set(r.member_id, r.last_seq - BigInt(counts.get(r.member_id) ?? 0) + 1n);
  return recipients.map((r) => {
    const seq = next.get(r.memberId) ?? 0n;
    next.set(r.memberId, seq + 1n);
    return { send: r.send, delivery: { memberId: r.memberId, to: r.name, seq } };
  });
}

async function insertAll(
  tx: Queryable,
  sends: BatchableSend[],
  rows: { send: number; delivery: Delivery }[],
): Promise<void> {
  if (rows.length === 0) return;
  const of = (r: { send: number }) => sends[r.send] as BatchableSend;
  await tx.query(
    `INSERT INTO messages (recipient_id, seq, team_id, sender_id, from_name, to_name, kind, body)
     SELECT * FROM unnest($1::int[], $2::bigint[], $3::int[], $4::int[], $5::text[], $6::text[],
                          $7::text[], $8::bytea[])`,
    [
      rows.map((r) => r.delivery.memberId),
      rows.map((r) => r.delivery.seq),
      rows.map((r) => of(r).teamId),
      rows.map((r) => of(r).sender.id),
      rows.map((r) => of(r).sender.name),
      rows.map((r) => of(r).to),
      rows.map((r) => of(r).kind),
      rows.map((r) => of(r).body),
    ],
  );
}
