import type { BacklogLimits } from "../domain/limits.js";
import { BROADCAST } from "../domain/names.js";
import { DomainError, LimitError, RuleViolationError } from "../errors.js";
import { attemptInsert, type NewAttempt, recordAttempt } from "./attempts.js";
import type { Database, Queryable } from "./database.js";
import { newEnvelopeId } from "./envelope-ids.js";
import { one } from "./rows.js";

export interface SendInput {
  teamId: number;
  sender: { id: number; name: string };
  /** A member name, or "*" for every other active member. */
  to: string;
  /** The team.v1.Message case, e.g. "text". */
  kind: string;
  /** team.v1.Message, protobuf binary. */
  body: Uint8Array;
  requestId?: string;
  /** Idempotency key, unique per sender. */
  messageId?: string;
  /** Identifies the message for message_id reuse checks (sha256 of to + body). */
  fingerprint?: Uint8Array;
  /**
   * Runs first inside the send's transaction, before any inbox is locked (a response checks
   * and moves its request here: request row before inbox rows is the one lock order).
   */
  beforeAppend?: (tx: Queryable) => Promise<void>;
  /**
   * Runs inside the send's transaction after the messages are stored, before commit
   * (a new protocol request stores its record here, so both commit or neither does).
   */
  beforeCommit?: (tx: Queryable, deliveries: Delivery[]) => Promise<void>;
  /** A protocol step's journal line, stored with the messages (in the same statement). */
  attempt?: NewAttempt;
  /** The envelope this one answers (its id), already checked visible to the sender. */
  replyTo?: string;
  /** The parent's thread; unset: the request's thread, or a new one (see appendToInboxes). */
  threadId?: string;
}

/** One message as appendToInboxes stores it (for every recipient alike). */
export interface NewMessage {
  teamId: number;
  /** null for messages the server writes itself. */
  senderId: number | null;
  fromName: string;
  /** The addressee as written: a member name or "*". */
  to: string;
  kind: string;
  body: Uint8Array;
  requestId?: string | undefined;
  messageId?: string | undefined;
  /** Journaled in the statement that stores the message (see SendInput.attempt). */
  attempt?: NewAttempt | undefined;
  /** See SendInput.replyTo and threadId. */
  replyTo?: string | undefined;
  threadId?: string | undefined;
}

export interface Delivery {
  memberId: number;
  to: string;
  seq: bigint;
}

export interface SendResult {
  deliveries: Delivery[];
  /** true when message_id matched an earlier send: nothing new was stored. */
  replayed: boolean;
  requestId: string;
}

interface StoredSend {
  fingerprint: Uint8Array;
  deliveries: { memberId: number; to: string; seq: string }[] | null;
  request_id: string | null;
}

/**
 * Stores one message in the inbox of each recipient, in one transaction. With a message_id,
 * a retry returns the first call's result and stores nothing. With `backlog`, a send that
 * would take any recipient's unacked backlog past it stores nothing (inbox-backlog).
 */
export async function sendMessage(
  db: Database,
  input: SendInput,
  backlog?: BacklogLimits,
): Promise<SendResult> {
  return db.transaction(async (tx) => {
    // First, before a protocol step (beforeAppend) may stop the sender itself.
    if (input.messageId) {
      const previous = await claimMessageId(tx, input);
      if (previous) return previous;
    } else {
      const [sender] = await tx.query<{ status: string }>(
        "SELECT status FROM members WHERE id = $1",
        [input.sender.id],
      );
      requireActiveSender(input, sender?.status);
    }
    await input.beforeAppend?.(tx);
    const recipients = await resolveRecipients(tx, input);
    const deliveries = await appendToInboxes(
      tx,
      {
        teamId: input.teamId,
        senderId: input.sender.id,
        fromName: input.sender.name,
        to: input.to,
        kind: input.kind,
        body: input.body,
        requestId: input.requestId,
        messageId: input.messageId,
        attempt: input.attempt,
        replyTo: input.replyTo,
        threadId: input.threadId,
      },
      recipients,
      backlog,
    );
    await input.beforeCommit?.(tx, deliveries);
    if (input.messageId) {
      await tx.query(
        `UPDATE sends SET deliveries = $3::jsonb, request_id = $4
         WHERE sender_id = $1 AND message_id = $2`,
        [
          input.sender.id,
          input.messageId,
          JSON.stringify(deliveries.map((d) => ({ ...d, seq: d.seq.toString() }))),
          input.requestId ?? null,
        ],
      );
    }
    return { deliveries, replayed: false, requestId: input.requestId ?? "" };
  });
}

/**
 * The sender must still be active: a token revoked on another server process a moment ago
 * may still be in this one's caller cache (interceptors/caller-cache.ts).
 */
function requireActiveSender(input: SendInput, status: string | undefined): void {
  if (status !== "active") throw revokedSender(input.sender.name);
}

/** The refusal of a send whose sender was stopped (its token revoked). */
export const revokedSender = (name: string): DomainError =>
  new DomainError("unauthenticated", `token revoked: member "${name}" is stopped`);

/**
 * The refusal of a call whose member's row is gone: its team was deleted (on another server
 * process, a moment ago) while this one's caller cache still trusted the token.
 */
export const deletedCaller = (): DomainError =>
  new DomainError(
    "unauthenticated",
    "token revoked: this member no longer exists (its team was deleted)",
  );

/** The refusal of a send to an observer: it reads the team's feed and receives nothing. */
export const observerNotAddressable = (to: string): RuleViolationError =>
  new RuleViolationError(
    "observer-not-addressable",
    "invalid-argument",
    `"${to}" is an observer: it watches the team and receives no messages`,
    "to",
  );

/** The refusal of a send to a member that is not there (or no longer active). */
export const unknownRecipient = (to: string, found: boolean): RuleViolationError =>
  new RuleViolationError(
    "known-recipient",
    "not-found",
    found
      ? `"${to}" is stopped and receives no new messages`
      : `no member "${to}" in this team (ListMembers shows who is there)`,
    "to",
  );

/** A recipient whose inbox would pass its backlog limit, and what it holds unacked now. */
export interface FullInbox {
  name: string;
  messages: bigint;
  bytes: bigint;
}

/**
 * The refusal of a send that would take recipients' unacked backlogs past their limit:
 * ResourceExhausted, limit "inbox-backlog", naming each full recipient (up to five) and the
 * limit it reached. Nothing of the send was stored, for any recipient.
 */
export function inboxBacklogFull(
  full: FullInbox[],
  limits: BacklogLimits,
  bodyBytes: number,
  broadcast: boolean,
): LimitError {
  const shown = full
    .slice(0, 5)
    .map((f) =>
      overMessages(f.messages + 1n, limits)
        ? `"${f.name}" holds ${f.messages} unacked messages, the most an inbox may hold ` +
          `(MAX_INBOX_BACKLOG ${limits.maxMessages})`
        : `"${f.name}" holds ${f.bytes} bytes of unacked messages, and ${bodyBytes} more would ` +
          `pass the most an inbox may hold (MAX_INBOX_BACKLOG_BYTES ${limits.maxBytes})`,
    );
  const more = full.length > shown.length ? `, and ${full.length - shown.length} more` : "";
  const who = full.length === 1 ? "it acks" : "they ack";
  return new LimitError(
    "inbox-backlog",
    `${shown.join("; ")}${more}; nothing was sent${broadcast ? " to anyone" : ""}: ` +
      `retry once ${who} what ${full.length === 1 ? "it has" : "they have"} read`,
    undefined,
    "to",
  );
}

const overMessages = (messages: bigint, limits: BacklogLimits) =>
  limits.maxMessages > 0 && messages > BigInt(limits.maxMessages);
const overBytes = (bytes: bigint, limits: BacklogLimits) =>
  limits.maxBytes > 0 && bytes > BigInt(limits.maxBytes);

// Inserting the key first makes a concurrent retry wait on the primary key until this
// transaction ends, then find the finished result (or, if this one rolled back, claim it).
// The same statement checks the sender (no extra round trip).
async function claimMessageId(tx: Queryable, input: SendInput): Promise<SendResult | undefined> {
  const [claim] = await tx.query<{ sender_status: string | null; claimed: boolean }>(
    `WITH sender AS (SELECT status FROM members WHERE id = $1),
     claimed AS (
       INSERT INTO sends (sender_id, message_id, fingerprint)
       SELECT $1, $2, $3 WHERE (SELECT status FROM sender) = 'active'
       ON CONFLICT (sender_id, message_id) DO NOTHING RETURNING 1
     )
     SELECT (SELECT status FROM sender) AS sender_status, EXISTS (SELECT 1 FROM claimed) AS claimed`,
    [input.sender.id, input.messageId, input.fingerprint],
  );
  requireActiveSender(input, claim?.sender_status ?? undefined);
  if (claim?.claimed) return undefined;
  const [stored] = await tx.query<StoredSend>(
    "SELECT fingerprint, deliveries, request_id FROM sends WHERE sender_id = $1 AND message_id = $2",
    [input.sender.id, input.messageId],
  );
  if (!sameBytes(stored?.fingerprint, input.fingerprint)) {
    throw new DomainError(
      "already-exists",
      `message_id "${input.messageId}" was already used for a different message; ` +
        "use a new message_id for each new message",
    );
  }
  return {
    deliveries: (stored?.deliveries ?? []).map((d) => ({ ...d, seq: BigInt(d.seq) })),
    replayed: true,
    requestId: stored?.request_id ?? "",
  };
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  return a !== undefined && b !== undefined && Buffer.from(a).equals(Buffer.from(b));
}

async function resolveRecipients(
  tx: Queryable,
  input: SendInput,
): Promise<{ id: number; name: string }[]> {
  // Observers receive nothing: not counted in a broadcast, refused as an addressee.
  if (input.to === BROADCAST) {
    return tx.query<{ id: number; name: string }>(
      `SELECT id, name FROM members
       WHERE team_id = $1 AND status = 'active' AND id <> $2 AND role <> 'observer' ORDER BY id`,
      [input.teamId, input.sender.id],
    );
  }
  const rows = await tx.query<{ id: number; name: string; status: string; role: string }>(
    "SELECT id, name, status, role FROM members WHERE team_id = $1 AND name = $2",
    [input.teamId, input.to],
  );
  const recipient = rows[0];
  if (recipient?.role === "observer") throw observerNotAddressable(input.to);
  if (recipient?.status !== "active") throw unknownRecipient(input.to, recipient !== undefined);
  return [recipient];
}

/**
 * Takes the next seq of each recipient's inbox and stores the rows. The inbox rows are
 * locked in member-id order (so two broadcasts cannot deadlock) and stay locked until
 * commit, which is what keeps every inbox's seqs committing in order. Each row draws its
 * team-feed position (a column default) when it is inserted, after those locks: the feed's
 * order agrees with every inbox's (docs/watch.md).
 *
 * With `backlog`, the backlogs are checked under those locks, so two concurrent sends cannot
 * both take the last room: if any recipient would hold more than the limits unacked, it
 * throws inboxBacklogFull and the caller's transaction stores nothing. Without it (the
 * server's own request_update notices, bounded by the requests members opened) nothing is
 * refused, but the counters still count the message.
 */
export async function appendToInboxes(
  tx: Queryable,
  message: NewMessage,
  recipients: { id: number; name: string }[],
  backlog?: BacklogLimits,
): Promise<Delivery[]> {
  if (recipients.length === 0) {
    if (message.attempt) await recordAttempt(tx, message.attempt);
    return [];
  }
  const ids = recipients.map((r) => r.id);
  const seqs = await tx.query<{
    member_id: number;
    last_seq: bigint;
    backlog_messages: bigint;
    backlog_bytes: bigint;
  }>(
    // The backlog after this message: the inbox's figures are the locked row's, the ack
    // cursor's as of this statement (an ack committing meanwhile only makes room, so the
    // check may refuse a moment early, never let one past).
    `UPDATE inboxes i
     SET last_seq = i.last_seq + 1, appended_bytes = i.appended_bytes + $2
     FROM (SELECT member_id FROM inboxes WHERE member_id = ANY($1::int[])
           ORDER BY member_id FOR UPDATE) locked, members m
     WHERE i.member_id = locked.member_id AND m.id = i.member_id
     RETURNING i.member_id, i.last_seq, i.last_seq - m.acked_seq AS backlog_messages,
               i.appended_bytes - m.acked_bytes AS backlog_bytes`,
    [ids, message.body.length],
  );
  if (backlog) {
    const nameOf = new Map(recipients.map((r) => [r.id, r.name]));
    const full = seqs
      .filter(
        (r) => overMessages(r.backlog_messages, backlog) || overBytes(r.backlog_bytes, backlog),
      )
      .sort((a, b) => a.member_id - b.member_id)
      .map((r) => ({
        name: nameOf.get(r.member_id) ?? "?",
        messages: r.backlog_messages - 1n,
        bytes: r.backlog_bytes - BigInt(message.body.length),
      }));
    if (full.length > 0) {
      throw inboxBacklogFull(full, backlog, message.body.length, message.to === BROADCAST);
    }
  }
  const seqOf = new Map(seqs.map((r) => [r.member_id, r.last_seq]));
  const deliveries = recipients.map((r) => ({
    memberId: r.id,
    to: r.name,
    seq: one(seqOf.get(r.id)),
  }));
  const envelopeId = newEnvelopeId();
  const params: unknown[] = [
    deliveries.map((d) => d.memberId),
    deliveries.map((d) => d.seq),
    message.teamId,
    message.senderId,
    message.fromName,
    message.to,
    message.requestId ?? null,
    message.messageId ?? null,
    message.kind,
    message.body,
    envelopeId,
    message.threadId ?? message.requestId ?? envelopeId,
    message.replyTo ?? null,
  ];
  const attempt = message.attempt ? attemptInsert(message.attempt, params.length + 1) : undefined;
  // Every message about a protocol request joins the thread its first message is in (the
  // request's own, or the one the request replied to); $12 when none is stored. Looked up
  // only for a request's messages: a plain send's thread is known.
  const thread = message.requestId
    ? `COALESCE((SELECT thread_id FROM messages
                 WHERE team_id = $3 AND request_id = $7::text
                 ORDER BY feed_position LIMIT 1), $12)`
    : "$12";
  await tx.query(
    // sent_at is when the row is stored, not when its transaction began (the column's
    // default): a sweeper's "expired" notice must not be dated before the deadline it reports.
    `${attempt ? `WITH attempt AS (${attempt.sql}) ` : ""}
     INSERT INTO messages (recipient_id, seq, team_id, sender_id, from_name, to_name,
                           request_id, message_id, kind, body, sent_at,
                           envelope_id, thread_id, reply_to)
     SELECT r.id, r.seq, $3, $4, $5, $6, $7, $8, $9, $10, clock_timestamp(), $11,
            ${thread}, $13
     FROM unnest($1::int[], $2::bigint[]) AS r (id, seq)`,
    attempt ? [...params, ...attempt.params] : params,
  );
  return deliveries;
}
