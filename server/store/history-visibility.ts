import type { StoredMessage } from "./inbox.js";

/**
 * Who reads which messages in the history calls (GetThread, ListThreads, SearchMessages):
 * what ReadInbox and WatchTeam already show them. A teammate reads its own inbox and what it
 * sent; the lead and observers read the team (WatchTeam). A broadcast is stored once per
 * recipient: the views keep one copy per envelope_id, the reader's own when it has one.
 */
export interface Reader {
  teamId: number;
  memberId: number;
  /** The lead or an observer. */
  wholeTeam: boolean;
}

/**
 * The SQL condition on `messages m` for reader parameters $1 (team), $2 (member), $3 (whole
 * team), and the ORDER BY prefix DISTINCT ON (m.envelope_id) needs to keep the reader's copy.
 */
export const VISIBLE =
  "m.team_id = $1 AND ($3::boolean OR m.recipient_id = $2 OR m.sender_id = $2)";
export const ONE_COPY = "m.envelope_id, (m.recipient_id = $2) DESC, m.recipient_id";

export const readerParams = (r: Reader): unknown[] => [r.teamId, r.memberId, r.wholeTeam];

/** The columns a history view reads of a message. */
export const ENVELOPE_COLUMNS = `m.seq, m.from_name, m.to_name, m.request_id, m.message_id, m.kind,
  m.body, m.sent_at, m.envelope_id, m.thread_id, m.reply_to, m.feed_position`;

export interface HistorySqlRow {
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
  feed_position: bigint;
}

export interface HistoryMessage extends StoredMessage {
  feedPosition: bigint;
}

export const toHistoryMessage = (r: HistorySqlRow): HistoryMessage => ({
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
  feedPosition: r.feed_position,
});
