import type { Message } from "@team-protocols/contract/team/v1/message_pb.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { answerRequest, openRequestPlan } from "./request-lifecycle.js";

/**
 * Permission: a teammate's runtime asks the lead whether it may use a tool (the runtime's own
 * permission prompt, relayed by the bridge: client/mcp/permission-relay.ts).
 *
 * - Request: `permission_request` (tool_name, description, input_preview, runtime_request_id),
 *   from a teammate to the lead (permission-to-lead, no-broadcast). Opens a pending request
 *   with a deadline (PERMISSION_TTL_MS, 5 minutes unless the Send gives a ttl).
 * - Answer: `permission_response` (request_id, allow, reason), only from the lead or an
 *   approver on its behalf (lead-only-approval, approver-acts-for-lead, addressee-only), once
 *   (once-only), to the teammate who asked (response-to-requester); a deny says why
 *   (reason-on-reject).
 * - States: pending -> approved (allowed) | rejected (denied) | expired | canceled. An expiry
 *   tells the teammate with a request_update, like every request kind.
 * - Side effects: none on the server; the bridge gives the runtime the verdict.
 */
export function planPermissionRequest(input: SendCall, message: Message): SendPlan {
  return openRequestPlan("permission", input, message);
}

export function planPermissionResponse(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "permissionResponse") throw new Error("not a permission_response");
  const answer = message.kind.value;
  return {
    message,
    requestId: answer.requestId,
    beforeAppend: (tx) =>
      answerRequest(tx, {
        kind: "permission",
        input,
        requestId: answer.requestId,
        approve: answer.allow,
        message,
      }),
    afterCommit({ waiters }) {
      waiters.notify(answer.requestId);
    },
  };
}
