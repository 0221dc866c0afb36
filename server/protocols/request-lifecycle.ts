import { randomBytes } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import type { AnsweredKind } from "../domain/words.js";
import { RuleViolationError } from "../errors.js";
import type { Queryable } from "../store/database.js";
import {
  finishRequest,
  lockPendingRequest,
  openRequest,
  type RequestKind,
  type RequestRow,
} from "../store/requests.js";
import { one } from "../store/rows.js";
import type { SendCall, SendPlan } from "./protocol.js";

/** A request id: "req_" and 128 random bits, so nobody can guess another team's ids. */
export function newRequestId(): string {
  return `req_${randomBytes(16).toString("base64url")}`;
}

/** The plan for a message that opens a request of `kind`, addressed to one member. */
export function openRequestPlan(
  kind: AnsweredKind,
  input: SendCall,
  message: Message,
  task?: { taskId: string; beforeAppend: (tx: Queryable) => Promise<void> },
): SendPlan {
  const requestId = newRequestId();
  return {
    message,
    requestId,
    ...(task ? { beforeAppend: task.beforeAppend } : {}),
    async beforeCommit(tx, deliveries) {
      await openRequest(tx, {
        id: requestId,
        teamId: input.caller.teamId,
        kind,
        fromId: input.caller.id,
        toId: one(deliveries[0]).memberId,
        body: toBinary(MessageSchema, message),
        ttlMs: input.ttlMs ?? input.config.defaultTtlMs[kind],
        taskId: task?.taskId,
      });
    },
    afterCommit() {},
  };
}

/**
 * Answers a pending request inside the send's transaction: lock it and check the stateful
 * rules (unknown-request, addressee-only, once-only, response-to-requester), move it to its
 * final state (compare-and-set, recording who answered), and run the protocol's side effect, all before the answer
 * is stored in the requester's inbox. Any refusal rolls the whole send back.
 */
export async function answerRequest(
  tx: Queryable,
  q: {
    kind: RequestKind;
    input: SendCall;
    requestId: string;
    approve: boolean;
    message: Message;
    onDecided?: (tx: Queryable, request: RequestRow) => Promise<void>;
  },
): Promise<void> {
  const request = await lockPendingRequest(tx, {
    teamId: q.input.caller.teamId,
    id: q.requestId,
    kind: q.kind,
    responderId: q.input.caller.id,
    // An approver answers the lead's requests for it (protocols/on-behalf.ts).
    actingForId: q.input.caller.role === "approver" ? q.input.caller.lead.id : undefined,
  });
  if (q.input.to !== request.fromName) {
    throw new RuleViolationError(
      "response-to-requester",
      "invalid-argument",
      `the answer to request ${q.requestId} goes to its requester "${request.fromName}"`,
      "to",
    );
  }
  const moved = await finishRequest(
    tx,
    request.id,
    q.approve ? "approved" : "rejected",
    toBinary(MessageSchema, q.message),
    q.input.caller.id,
  );
  if (!moved) {
    // Only possible if the deadline passed between the lock and now.
    throw new RuleViolationError(
      "once-only",
      "failed-precondition",
      `request ${q.requestId} is already expired; a request is answered once`,
      "message.request_id",
    );
  }
  await q.onDecided?.(tx, request);
}
