import { createHash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import {
  AckResponseSchema,
  DeliverySchema,
  ReadInboxResponseSchema,
  SendResponseSchema,
  type TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import type { BacklogLimits } from "../domain/limits.js";
import { isProtocolMessage, messageAction } from "../domain/message-kinds.js";
import { BROADCAST } from "../domain/names.js";
import { RuleViolationError } from "../errors.js";
import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { planSend } from "../protocols/index.js";
import type { ProtocolConfig } from "../protocols/protocol.js";
import type { Database } from "../store/database.js";
import { ack, inboxPosition, readInbox } from "../store/inbox.js";
import type { SendInput } from "../store/send.js";
import { createSender } from "../store/sender.js";
import { threadOfVisible } from "../store/threads.js";
import { toEnvelope } from "./convert.js";
import { readerOf } from "./history.js";

const DEFAULT_READ_LIMIT = 100;
const MAX_READ_LIMIT = 1000;

type MessagingImpl = Pick<ServiceImpl<typeof TeamService>, "send" | "readInbox" | "ack">;

/** Send, ReadInbox, Ack. Subscribe is in subscribe.ts. */
export function messagingHandlers(deps: {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  teams: TeamHub;
  protocols: ProtocolConfig;
  /** What a recipient's inbox may hold unacked before sends to it are refused. */
  backlog: BacklogLimits;
}): MessagingImpl {
  const { db, hub, waiters, teams, protocols, backlog } = deps;
  // The store decides how a send reaches the database (group commit or a transaction).
  const sender = createSender(db, backlog);
  return {
    async send(req, ctx) {
      const caller = requireCaller(ctx.values);
      // The rules interceptor has refused a missing message already.
      const message = req.message ?? create(MessageSchema);
      const plan = planSend({
        caller,
        to: req.to,
        message,
        ttlMs: req.ttl
          ? Number(req.ttl.seconds) * 1000 + Math.floor(req.ttl.nanos / 1e6)
          : undefined,
        config: protocols,
      });
      const threadId = req.replyTo ? await replyThread(db, caller, req.replyTo) : undefined;
      const input: SendInput = {
        teamId: caller.teamId,
        sender: { id: caller.id, name: caller.name },
        to: req.to,
        kind: messageAction(message),
        body: toBinary(MessageSchema, plan.message),
        ...(plan.requestId ? { requestId: plan.requestId } : {}),
        ...(threadId ? { replyTo: req.replyTo, threadId } : {}),
        ...(plan.beforeAppend ? { beforeAppend: plan.beforeAppend } : {}),
        ...(plan.beforeCommit ? { beforeCommit: plan.beforeCommit } : {}),
        // A protocol step is journaled in its own transaction: there exactly when it happened.
        ...(isProtocolMessage(message)
          ? {
              attempt: {
                teamId: caller.teamId,
                memberId: caller.id,
                action: messageAction(message),
                to: req.to,
                requestId: plan.requestId ?? "",
                outcome: "accepted" as const,
                ...(plan.onBehalfOf ? { onBehalfOf: plan.onBehalfOf } : {}),
              },
            }
          : {}),
        ...(req.messageId
          ? {
              messageId: req.messageId,
              fingerprint: fingerprint(req.to, toBinary(MessageSchema, message)),
            }
          : {}),
      };
      const result = await sender.send(input);
      if (!result.replayed) {
        hub.wake(result.deliveries.map((d) => d.memberId));
        teams.wake([caller.teamId]); // the envelopes (and any request or member change) are in its feed
        plan.afterCommit?.({ hub, waiters });
      }
      return create(SendResponseSchema, {
        seq: req.to === BROADCAST ? 0n : (result.deliveries[0]?.seq ?? 0n),
        requestId: result.requestId,
        deliveries: result.deliveries.map((d) => create(DeliverySchema, { to: d.to, seq: d.seq })),
        replayed: result.replayed,
      });
    },

    async readInbox(req, ctx) {
      const caller = requireCaller(ctx.values);
      const limit = Math.min(req.limit || DEFAULT_READ_LIMIT, MAX_READ_LIMIT);
      const position = await inboxPosition(db, caller.id);
      const after = req.afterSeq ?? position.ackedSeq;
      const messages = await readInbox(db, caller.id, after, limit);
      let ackedSeq = position.ackedSeq;
      const last = messages.at(-1);
      if (req.ack && last) ackedSeq = await ack(db, caller.id, last.seq);
      return create(ReadInboxResponseSchema, {
        envelopes: messages.map((m) => toEnvelope(caller.teamName, m)),
        ackedSeq,
        lastSeq: last && last.seq > position.lastSeq ? last.seq : position.lastSeq,
      });
    },

    async ack(req, ctx) {
      const caller = requireCaller(ctx.values);
      return create(AckResponseSchema, { ackedSeq: await ack(db, caller.id, req.seq) });
    },
  };
}

/**
 * The thread a reply joins: its parent's, which must be a message the sender may read (what
 * GetThread would show it). Messages are never changed, only deleted by retention, so this
 * read needs no lock: a parent deleted meanwhile leaves a reply in a thread of its own past.
 */
async function replyThread(db: Database, caller: Caller, replyTo: string): Promise<string> {
  const thread = await threadOfVisible(db, readerOf(caller), replyTo);
  if (thread === undefined) {
    throw new RuleViolationError(
      "known-reply-to",
      "not-found",
      `no message "${replyTo}" you may read to reply to (an Envelope's id)`,
      "reply_to",
    );
  }
  return thread;
}

/** Identifies a message for message_id reuse checks: the addressee and the exact bytes. */
function fingerprint(to: string, body: Uint8Array): Uint8Array {
  return createHash("sha256").update(to).update("\0").update(body).digest();
}
