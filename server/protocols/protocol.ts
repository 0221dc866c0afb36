import type { Message } from "@team-protocols/contract/team/v1/message_pb.js";
import type { Caller } from "../caller.js";
import type { AnsweredKind } from "../domain/words.js";
import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { Queryable } from "../store/database.js";
import type { Delivery } from "../store/send.js";

/** Deadlines of protocol requests. */
export interface ProtocolConfig {
  /** Default time to answer, per request kind, when the request gives no ttl. */
  defaultTtlMs: Record<AnsweredKind, number>;
}

export const defaultProtocolConfig: ProtocolConfig = {
  defaultTtlMs: {
    shutdown: 5 * 60_000,
    plan_approval: 30 * 60_000,
    // A claim or a handoff waits on one agent's turn; a result may take the lead a while to check.
    task_claim: 10 * 60_000,
    task_handoff: 10 * 60_000,
    result_signoff: 30 * 60_000,
    // A permission prompt holds up a working agent: the lead answers soon or not at all.
    permission: 5 * 60_000,
  },
};

/**
 * One Send as a protocol plans it, after authentication and the stateless rules (the store's
 * SendInput is what the plan becomes).
 */
export interface SendCall {
  caller: Caller;
  /** The addressee as written. */
  to: string;
  message: Message;
  /** The request's ttl, when the client gave one. */
  ttlMs: number | undefined;
  config: ProtocolConfig;
}

/** What the live parts of the server need to carry out side effects after a commit. */
export interface Effects {
  hub: InboxHub;
  waiters: RequestWaiters;
}

/**
 * How a protocol carries out one Send: the message as stored (the server may fill fields
 * in), and hooks into the send's one transaction.
 */
export interface SendPlan {
  message: Message;
  /** The request this message opens (a new id) or answers: in the envelope and the response. */
  requestId?: string;
  /** Inside the transaction, before the inboxes are locked: check and move a request. */
  beforeAppend?: (tx: Queryable) => Promise<void>;
  /** Inside the transaction, after the message is stored: store a new request. */
  beforeCommit?: (tx: Queryable, deliveries: Delivery[]) => Promise<void>;
  /** An approver's answer: the lead it answered for (the journal line names it). */
  onBehalfOf?: string;
  /** After commit, when the send was not a replay: end streams, wake waiters. */
  afterCommit?: (effects: Effects) => void;
}
