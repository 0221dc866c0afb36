import type { BacklogLimits } from "../domain/limits.js";
import { BROADCAST } from "../domain/names.js";
import type { Database, Queryable } from "./database.js";
import { newEnvelopeId } from "./envelope-ids.js";
import {
  type FullInbox,
  inboxBacklogFull,
  observerNotAddressable,
  revokedSender,
  type SendInput,
  type SendResult,
  unknownRecipient,
} from "./send.js";
import { claimKeys, KeyTaken, releaseKeys } from "./send-keys.js";

/**
 * A send the batch path takes: plain or with an idempotency key, no protocol hooks, no
 * journal line (sender.ts).
 */
export type BatchableSend = Pick<
  SendInput,
  | "teamId"
  | "sender"
  | "to"
  | "kind"
  | "body"
  | "messageId"
  | "fingerprint"
  | "replyTo"
  | "threadId"
>;

/**
 * Stores many sends with ONE statement, which is its own transaction: one round trip and
 * one commit (one WAL flush) for the whole batch, whatever its size. Concurrent senders
 * share it: that is what lifts the hot inbox (a whole team reporting to its lead) past one
 * commit per message.
 *
 * A batch holding sends with a message_id is a transaction of two statements instead: their
 * keys are claimed first (send-keys.ts), then the one statement stores the sends whose keys
 * were free and records their results under their keys; a send whose key was taken stores
 * nothing here and fails with KeyTaken, and the claims of refused sends are given back.
 *
 * In that statement: the senders are checked (still active: a token revoked on another
 * server process a moment ago may still be in this one's caller cache), the recipients
 * resolved (a name, or "*" for every other active member), the inbox rows locked in
 * member-id order (so concurrent batches and sends cannot deadlock), the backlogs checked
 * under those locks, each inbox's seqs taken with one UPDATE and every row inserted with
 * one INSERT. Per inbox, seqs follow the order of the batch, which is the order the sends
 * arrived in. A send that fails a rule (revoked sender, unknown or stopped recipient, a
 * recipient's backlog full) stores nothing and fails alone.
 *
 * The backlog check is cautious: a send is refused when it would pass a recipient's limits
 * counting every earlier send of the batch to that inbox, even one refused itself (a
 * broadcast refused because another recipient is full). sender.ts decides the sends refused
 * here once more, alone, in a transaction of their own, so no send is refused that fits.
 */
export async function sendBatch(
  db: Database,
  sends: BatchableSend[],
  backlog: BacklogLimits = NO_BACKLOG_LIMIT,
): Promise<(SendResult | Error)[]> {
  if (!sends.some((s) => s.messageId)) return storeBatch(db, sends, backlog);
  return db.transaction(async (tx) => {
    const free = await claimKeys(tx, sends);
    const claimed = sends.filter((_, i) => free[i]);
    const stored = claimed.length > 0 ? await storeBatch(tx, claimed, backlog) : [];
    await releaseKeys(
      tx,
      claimed.filter((s, i) => s.messageId && stored[i] instanceof Error),
    );
    let next = 0;
    return sends.map((s, i) =>
      free[i]
        ? (stored[next++] as SendResult | Error)
        : new KeyTaken(`message_id "${s.messageId}" of ${s.sender.name} was taken`),
    );
  });
}

/** The one statement (see sendBatch). Keyed sends in it must have claimed their keys. */
async function storeBatch(
  db: Queryable,
  sends: BatchableSend[],
  backlog: BacklogLimits,
): Promise<(SendResult | Error)[]> {
  const envelopeIds = sends.map(() => newEnvelopeId());
  const rows = await db.query<{
    row_kind: "check" | "delivery" | "full";
    idx: bigint;
    sender_status: string | null;
    target_status: string | null;
    target_role: string | null;
    member_id: number | null;
    name: string | null;
    seq: bigint | null;
    backlog_messages: bigint | null;
    backlog_bytes: bigint | null;
  }>(
    // No two CTEs are joined on a key: their row estimates are guesses (a fresh team's
    // broadcast is estimated at one row and gets 1,000), and a nested loop over two CTE
    // scans is quadratic (a broadcast to 1,000 took many times as long). Rows
    // carry the batch index instead, and the message fields come from the parameter arrays
    // by that index; CTEs meet tables only by primary key.
    `WITH q AS (
       SELECT * FROM unnest($1::int[], $2::int[], $4::text[])
         WITH ORDINALITY AS q (team_id, sender_id, to_name, idx)
     ),
     checks AS (
       SELECT q.idx, s.status AS sender_status, t.status AS target_status, t.role AS target_role
       FROM q
       LEFT JOIN members s ON s.id = q.sender_id
       LEFT JOIN members t ON q.to_name <> '*' AND t.team_id = q.team_id AND t.name = q.to_name
     ),
     recipients AS (
       SELECT q.idx, m.id AS member_id, m.name
       FROM q
       JOIN members s ON s.id = q.sender_id AND s.status = 'active'
       JOIN members m ON m.team_id = q.team_id AND m.name = q.to_name AND m.status = 'active'
         AND m.role <> 'observer'
       WHERE q.to_name <> '*'
       UNION ALL
       SELECT q.idx, m.id, m.name
       FROM q
       JOIN members s ON s.id = q.sender_id AND s.status = 'active'
       JOIN members m ON m.team_id = q.team_id AND m.status = 'active' AND m.id <> q.sender_id
         AND m.role <> 'observer'
       WHERE q.to_name = '*'
     ),
     per_inbox AS (
       SELECT member_id, min(name) AS name, array_agg(idx ORDER BY idx) AS idxs
       FROM recipients GROUP BY member_id
     ),
     -- Every inbox row locked, in member-id order, before anything is decided or written.
     -- The locked row's figures are current; the ack cursor's are this statement's (an ack
     -- committing meanwhile only makes room: the check may refuse early, never let one past).
     locked AS MATERIALIZED (
       SELECT p.member_id, p.name, p.idxs, i.last_seq - m.acked_seq AS backlog_messages,
              i.appended_bytes - m.acked_bytes AS backlog_bytes
       FROM per_inbox p
       JOIN inboxes i ON i.member_id = p.member_id
       JOIN members m ON m.id = p.member_id
       ORDER BY p.member_id FOR UPDATE OF i
     ),
     -- Each send's place in each of its inboxes: that inbox's backlog once it is stored.
     queued AS (
       SELECT l.member_id, l.name, u.idx,
              l.backlog_messages + u.k AS messages_after,
              l.backlog_bytes + sum(($7::int[])[u.idx::int]) OVER (
                PARTITION BY l.member_id ORDER BY u.k) AS bytes_after
       FROM locked l, unnest(l.idxs) WITH ORDINALITY AS u (idx, k)
     ),
     too_full AS (
       SELECT * FROM queued
       WHERE ($8::bigint > 0 AND messages_after > $8::bigint)
          OR ($9::bigint > 0 AND bytes_after > $9::bigint)
     ),
     -- A send refused for one recipient is stored for none (a broadcast is all or nothing).
     admitted AS (
       SELECT member_id, min(name) AS name, array_agg(idx ORDER BY idx) AS idxs,
              sum(($7::int[])[idx::int]) AS bytes
       FROM queued WHERE idx NOT IN (SELECT idx FROM too_full)
       GROUP BY member_id
     ),
     bumped AS (
       UPDATE inboxes i SET last_seq = i.last_seq + cardinality(a.idxs),
                            appended_bytes = i.appended_bytes + a.bytes
       FROM admitted a
       WHERE i.member_id = a.member_id
       RETURNING i.member_id, a.name, a.idxs, i.last_seq - cardinality(a.idxs) AS base
     ),
     numbered AS MATERIALIZED (
       SELECT u.idx, b.member_id, b.name, b.base + u.k AS seq
       FROM bumped b, unnest(b.idxs) WITH ORDINALITY AS u (idx, k)
     ),
     -- In seq order: each row draws its team-feed position (a column default) as it is
     -- inserted, so one inbox's rows of this batch take positions in seq order.
     stored AS (
       INSERT INTO messages (recipient_id, seq, team_id, sender_id, from_name, to_name, kind, body,
                             message_id, envelope_id, thread_id, reply_to)
       SELECT n.member_id, n.seq, ($1::int[])[n.idx::int], ($2::int[])[n.idx::int],
              ($3::text[])[n.idx::int], ($4::text[])[n.idx::int], ($5::text[])[n.idx::int],
              ($6::bytea[])[n.idx::int], ($10::text[])[n.idx::int], ($11::text[])[n.idx::int],
              ($12::text[])[n.idx::int], ($13::text[])[n.idx::int]
       FROM numbered n ORDER BY n.member_id, n.seq
     ),
     -- A keyed send's result under its key (claimed by this transaction's first statement),
     -- shaped as send.ts records it, for a retry to replay. A keyed broadcast that reached
     -- nobody keeps the claim's NULL, which a replay reads as no deliveries.
     results AS (
       UPDATE sends s SET deliveries = r.deliveries
       FROM (SELECT idx, jsonb_agg(jsonb_build_object('memberId', member_id, 'to', name,
                                                      'seq', seq::text) ORDER BY member_id)
                        AS deliveries
             FROM numbered GROUP BY idx) r
       WHERE ($10::text[])[r.idx::int] IS NOT NULL
         AND s.sender_id = ($2::int[])[r.idx::int] AND s.message_id = ($10::text[])[r.idx::int]
     )
     SELECT 'check' AS row_kind, idx, sender_status, target_status, target_role,
            NULL::int AS member_id, NULL::text AS name, NULL::bigint AS seq,
            NULL::bigint AS backlog_messages, NULL::bigint AS backlog_bytes
     FROM checks
     UNION ALL
     SELECT 'full', idx, NULL, NULL, NULL, member_id, name, NULL,
            messages_after - 1, bytes_after - ($7::int[])[idx::int]
     FROM too_full
     UNION ALL
     SELECT 'delivery', idx, NULL, NULL, NULL, member_id, name, seq, NULL, NULL FROM numbered
     ORDER BY idx, row_kind, member_id`,
    [
      sends.map((s) => s.teamId),
      sends.map((s) => s.sender.id),
      sends.map((s) => s.sender.name),
      sends.map((s) => s.to),
      sends.map((s) => s.kind),
      sends.map((s) => s.body),
      sends.map((s) => s.body.length),
      backlog.maxMessages,
      backlog.maxBytes,
      sends.map((s) => s.messageId || null),
      envelopeIds,
      sends.map((s, i) => s.threadId ?? envelopeIds[i]),
      sends.map((s) => s.replyTo ?? null),
    ],
  );
  const results: (SendResult | Error)[] = sends.map(() => ({
    deliveries: [],
    replayed: false,
    requestId: "",
  }));
  const fullInboxes = sends.map((): FullInbox[] => []);
  // Per send: its checks row first, then its deliveries or the inboxes it would overfill,
  // in member-id order ('check' < 'delivery' < 'full').
  for (const row of rows) {
    const i = Number(row.idx) - 1;
    const send = sends[i] as BatchableSend;
    const result = results[i] as SendResult | Error;
    if (row.row_kind === "check") {
      results[i] = refusalOf(send, row.sender_status, row.target_status, row.target_role) ?? result;
    } else if (row.row_kind === "full") {
      (fullInboxes[i] as FullInbox[]).push({
        name: row.name ?? "?",
        messages: row.backlog_messages ?? 0n,
        bytes: row.backlog_bytes ?? 0n,
      });
    } else if (!(result instanceof Error) && row.name !== null && row.seq !== null) {
      result.deliveries.push({ memberId: row.member_id ?? 0, to: row.name, seq: row.seq });
    }
  }
  fullInboxes.forEach((full, i) => {
    const send = sends[i] as BatchableSend;
    if (full.length > 0 && !(results[i] instanceof Error)) {
      results[i] = inboxBacklogFull(full, backlog, send.body.length, send.to === BROADCAST);
    }
  });
  return results;
}

/** Limits of 0: nothing is refused for its backlog. */
const NO_BACKLOG_LIMIT: BacklogLimits = { maxMessages: 0, maxBytes: 0 };

/** Why a send of the batch stored nothing, if it broke a rule. */
function refusalOf(
  send: BatchableSend,
  senderStatus: string | null,
  targetStatus: string | null,
  targetRole: string | null,
): Error | undefined {
  if (senderStatus !== "active") return revokedSender(send.sender.name);
  if (targetRole === "observer") return observerNotAddressable(send.to);
  if (send.to !== BROADCAST && targetStatus !== "active") {
    return unknownRecipient(send.to, targetStatus !== null);
  }
  return undefined;
}
