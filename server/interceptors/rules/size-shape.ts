import { MAX_MESSAGE_ID_CHARS, MAX_SEQ, MAX_TTL_MS, MIN_TTL_MS } from "../../domain/limits.js";
import { BROADCAST } from "../../domain/names.js";
import { enumValueViolation } from "./enum-values.js";
import { getThreadShape, replyToViolation, searchMessagesShape } from "./history-shape.js";
import {
  acquireLeaseShape,
  listLeasesShape,
  releaseLeaseShape,
  renewLeaseShape,
} from "./lease-shape.js";
import { messageShapeViolation } from "./message-shape.js";
import { nameViolation, requestIdViolation, taskIdViolation } from "./names.js";
import { type AnyRequest, M, type Rule, type RuleCall, type Violation } from "./rule.js";
import { createTaskShape, listTasksShape, updateTaskShape } from "./task-list-shape.js";

/** An Ed25519 public key in PEM is about 113 characters; room for comments and line ends. */
const MAX_PUBLIC_KEY_CHARS = 4096;

/**
 * size-shape: names, ids, cursors, enum values and bodies have the shapes and sizes the contract promises.
 * Checked first, so that every later rule can trust the fields it reads.
 */
export const sizeShape: Rule = {
  id: "size-shape",
  refusal: "invalid-argument",
  check(call: RuleCall): Violation | undefined {
    const { method, request } = call;
    const enumViolation = enumValueViolation(call);
    if (enumViolation) return enumViolation;
    switch (method) {
      case M.createTeam:
        return (
          nameViolation(request.team, "team", "team") ??
          (request.leadName === ""
            ? undefined
            : nameViolation(request.leadName, "lead_name", "lead_name"))
        );
      case M.addMember:
      case M.removeMember:
        return nameViolation(request.name, "name", "name");
      case M.deleteTeam:
        return nameViolation(request.team, "team", "team");
      case M.importTeam:
        if (request.publicKey.length > MAX_PUBLIC_KEY_CHARS) {
          return {
            sentence: `public_key is longer than ${MAX_PUBLIC_KEY_CHARS} characters`,
            field: "public_key",
          };
        }
        return request.team === "" ? undefined : nameViolation(request.team, "team", "team");
      case M.rotateToken:
        return request.member === ""
          ? undefined
          : nameViolation(request.member, "member", "member");
      case M.send:
        return sendShape(request);
      case M.getRequest:
      case M.awaitRequest:
      case M.cancelRequest:
        return requestIdViolation(request.requestId, "request_id");
      case M.ack:
        return request.seq > MAX_SEQ
          ? { sentence: `seq is larger than ${MAX_SEQ}`, field: "seq" }
          : undefined;
      case M.readInbox:
      case M.subscribe:
        return (request.afterSeq ?? 0n) > MAX_SEQ
          ? { sentence: `after_seq is larger than ${MAX_SEQ}`, field: "after_seq" }
          : undefined;
      case M.listRequests:
        return request.party === "" ? undefined : nameViolation(request.party, "party", "party");
      case M.listAttempts:
        return listAttemptsShape(request);
      case M.getTask:
      case M.deleteTask:
        return taskIdViolation(request.taskId, "task_id");
      case M.listTasks:
        return listTasksShape(request);
      case M.createTask:
        return createTaskShape(request);
      case M.updateTask:
        return updateTaskShape(request);
      case M.acquireLease:
        return acquireLeaseShape(request);
      case M.renewLease:
        return renewLeaseShape(request);
      case M.releaseLease:
        return releaseLeaseShape(request);
      case M.listLeases:
        return listLeasesShape(request);
      case M.getThread:
        return getThreadShape(request);
      case M.searchMessages:
        return searchMessagesShape(request);
    }
    return undefined;
  },
};

/** The message cases that open a request someone answers: they may carry a ttl. */
const REQUEST_CASES = new Set([
  "shutdownRequest",
  "planApprovalRequest",
  "taskClaimRequest",
  "taskHandoffRequest",
  "resultSignoffRequest",
  "permissionRequest",
]);

function sendShape(request: AnyRequest): Violation | undefined {
  if (request.to !== BROADCAST) {
    const v = nameViolation(request.to, "to", "to");
    if (v) return v;
  }
  const replyTo = replyToViolation(request.replyTo);
  if (replyTo) return replyTo;
  if ([...request.messageId].length > MAX_MESSAGE_ID_CHARS) {
    return {
      sentence: `message_id is longer than ${MAX_MESSAGE_ID_CHARS} characters`,
      field: "message_id",
    };
  }
  // PostgreSQL text cannot hold U+0000; other control characters are no better as keys.
  if (/\p{Cc}/u.test(request.messageId)) {
    return { sentence: "message_id contains control characters", field: "message_id" };
  }
  const kind = request.message?.kind;
  if (kind?.case === undefined) {
    return {
      sentence: 'message is required: set one case, e.g. {"text": "hello"}',
      field: "message",
    };
  }
  if (request.ttl !== undefined) {
    if (!REQUEST_CASES.has(kind.case)) {
      return { sentence: "ttl applies to protocol requests only", field: "ttl" };
    }
    const ms = Number(request.ttl.seconds) * 1000 + request.ttl.nanos / 1e6;
    if (!(ms >= MIN_TTL_MS && ms <= MAX_TTL_MS)) {
      return {
        sentence: `ttl must be between ${MIN_TTL_MS / 1000} s and ${MAX_TTL_MS / 86_400_000} days`,
        field: "ttl",
      };
    }
  }
  return messageShapeViolation(kind);
}

function listAttemptsShape(request: AnyRequest): Violation | undefined {
  if (request.member !== "") {
    const v = nameViolation(request.member, "member", "member");
    if (v) return v;
  }
  // Any id an attempt may have named (a refusal keeps a malformed one, up to 128
  // characters), but nothing PostgreSQL text cannot hold.
  if ([...request.requestId].length > 128 || /\p{Cc}/u.test(request.requestId)) {
    return {
      sentence: "request_id is longer than 128 characters or contains control characters",
      field: "request_id",
    };
  }
  return undefined;
}
