import { DomainError } from "../errors.js";
import type { Queryable } from "./database.js";

export interface StoredMessage {
  seq: bigint;
  fromName: string;
  toName: string;
  requestId: string;
  messageId: string;
  kind: string;
  body: Uint8Array;
  sentAt: Date;
  /** The sent message's id, its thread and the id it replied to ("" for none): migration 012. */
  envelopeId: string;
  threadId: string;
  replyTo: string;
}

interface MessageSqlRow {
  seq: bigint;
  from_name: string;
  to_name: string;
  request_id: string | null;
  message_id: string | null;
  kind: string;
  body: Uint8Array;
  sent_at: Date;
  envelope_id: string;
  thread_id: string;
  reply_to: string | null;
}

/**
 * Messages of one inbox with seq > afterSeq, in seq order: at most `limit` rows, and no more
 * rows once `maxBytes` of bodies are reached (the first row always comes), so one read holds
 * a bounded amount of memory however large the messages are.
 */
export async function readInbox(
  db: Queryable,
  memberId: number,
  afterSeq: bigint,
  limit: number,
  maxBytes = 4 * 1024 * 1024,
): Promise<StoredMessage[]> {
  const rows = await db.query<MessageSqlRow>(
    `SELECT seq, from_name, to_name, request_id, message_id, kind, body, sent_at, envelope_id,
            thread_id, reply_to
     FROM (
       SELECT *, sum(octet_length(body)) OVER (ORDER BY seq) - octet_length(body) AS before
       FROM messages WHERE recipient_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
     ) page
     WHERE before < $4
     ORDER BY seq`,
    [memberId, afterSeq, limit, maxBytes],
  );
  return rows.map(toStoredMessage);
}

const toStoredMessage = (r: MessageSqlRow): StoredMessage => ({
  seq: r.seq,
  fromName: r.from_name,
  toName: r.to_name,
  requestId: r.request_id ?? "",
  messageId: r.message_id ?? "",
  kind: r.kind,
  body: r.body,
  sentAt: r.sent_at,
  envelopeId: r.envelope_id,
  threadId: r.thread_id,
  replyTo: r.reply_to ?? "",
});

export interface InboxRead {
  memberId: number;
  afterSeq: bigint;
}

export interface InboxPage {
  messages: StoredMessage[];
  /** Rows were left out (by `limit` or `maxBytes`): read on from the last one at once. */
  more: boolean;
}

/**
 * Several readInbox calls in one query (one round trip), with the same limits per read:
 * what live subscriptions woken by one commit need (a broadcast wakes the whole team).
 */
export async function readInboxes(
  db: Queryable,
  reads: InboxRead[],
  limit: number,
  maxBytes: number,
): Promise<InboxPage[]> {
  const rows = await db.query<MessageSqlRow & { idx: bigint; fetched: bigint }>(
    `SELECT q.idx, page.fetched, page.seq, page.from_name, page.to_name, page.request_id,
            page.message_id, page.kind, page.body, page.sent_at, page.envelope_id,
            page.thread_id, page.reply_to
     FROM unnest($1::int[], $2::bigint[]) WITH ORDINALITY AS q (member_id, after_seq, idx)
     CROSS JOIN LATERAL (
       SELECT *, sum(octet_length(body)) OVER (ORDER BY seq) - octet_length(body) AS before,
              count(*) OVER () AS fetched
       FROM (
         SELECT * FROM messages WHERE recipient_id = q.member_id AND seq > q.after_seq
         ORDER BY seq LIMIT $3
       ) first_rows
     ) page
     WHERE page.before < $4
     ORDER BY q.idx, page.seq`,
    [reads.map((r) => r.memberId), reads.map((r) => r.afterSeq), limit, maxBytes],
  );
  const pages: InboxPage[] = reads.map(() => ({ messages: [], more: false }));
  const fetched = reads.map(() => 0);
  for (const row of rows) {
    const i = Number(row.idx) - 1;
    (pages[i] as InboxPage).messages.push(toStoredMessage(row));
    fetched[i] = Number(row.fetched);
  }
  pages.forEach((page, i) => {
    page.more = fetched[i] === limit || (fetched[i] ?? 0) > page.messages.length;
  });
  return pages;
}

export interface InboxPosition {
  ackedSeq: bigint;
  lastSeq: bigint;
}

/** The member's ack cursor and the highest committed seq of its inbox. */
export async function inboxPosition(db: Queryable, memberId: number): Promise<InboxPosition> {
  const [row] = await db.query<{ acked_seq: bigint; last_seq: bigint }>(
    `SELECT m.acked_seq, i.last_seq FROM members m JOIN inboxes i ON i.member_id = m.id
     WHERE m.id = $1`,
    [memberId],
  );
  if (!row) throw new DomainError("not-found", "inbox not found");
  return { ackedSeq: row.acked_seq, lastSeq: row.last_seq };
}

/**
 * Moves the ack cursor forward to `seq` (never back). A seq past the last committed
 * message is refused: acking what does not exist yet would silently skip it later.
 * The bytes of the newly acked bodies are counted (acked_bytes, migration 005): that is
 * what makes room again under the inbox backlog limit.
 */
export async function ack(db: Queryable, memberId: number, seq: bigint): Promise<bigint> {
  const [row] = await db.query<{ acked_seq: bigint }>(
    // Two acks racing on one member: the second waits for the first's row lock and is then
    // evaluated again on the row the first left, so each body is counted once. The range
    // read was committed before its seqs were (seqs commit in order under the inbox lock),
    // and the retention job deletes only rows at or below the cursor, never in the range.
    `UPDATE members SET acked_seq = GREATEST(acked_seq, $2),
       acked_bytes = acked_bytes + COALESCE((
         SELECT sum(octet_length(body)) FROM messages
         WHERE recipient_id = $1 AND seq > members.acked_seq AND seq <= $2), 0)
     WHERE id = $1 AND $2 <= (SELECT last_seq FROM inboxes WHERE member_id = $1)
     RETURNING acked_seq`,
    [memberId, seq],
  );
  if (row) return row.acked_seq;
  const position = await inboxPosition(db, memberId);
  throw new DomainError(
    "out-of-range",
    `cannot ack seq ${seq}: the last message in your inbox is seq ${position.lastSeq}`,
  );
}
