import { create } from "@bufbuild/protobuf";
import { PermissionMode } from "@team-protocols/contract/team/v1/enums_pb.js";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { permissionModeToProto } from "../domain/enums.js";
import { type PermissionMode as Mode, setPermissionMode } from "../store/members.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { answerRequest, openRequestPlan } from "./request-lifecycle.js";

export const DEFAULT_REJECTION_FEEDBACK = "Plan needs revision";

/**
 * Plan approval: a teammate asks the lead to approve a plan before carrying it out.
 *
 * - Request: `plan_approval_request` (the plan), from a teammate to the lead (plan-to-lead,
 *   no-broadcast). Opens a pending request with a deadline.
 * - Answer: `plan_approval_response` (request_id, approve, feedback), only from the lead
 *   (lead-only-approval, addressee-only), once (once-only), to the teammate who asked
 *   (response-to-requester).
 * - States: pending -> approved | rejected | expired | canceled.
 * - Approve: the server sets permission_mode, the mode the teammate inherits, to the lead's
 *   own mode (the lead's `plan` becomes `default`), in the message and on the teammate's
 *   member record. Whatever mode a client put in the message is replaced.
 * - Reject: feedback defaults to "Plan needs revision"; permission_mode stays unset.
 */
export function planPlanApprovalRequest(input: SendCall, message: Message): SendPlan {
  return openRequestPlan("plan_approval", input, message);
}

/** The mode a teammate inherits from the lead: everything but `plan`, which becomes default. */
export function inheritedMode(leadMode: Mode): Mode {
  return leadMode === "plan" ? "default" : leadMode;
}

export function planPlanApprovalResponse(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "planApprovalResponse") throw new Error("not a plan_approval_response");
  const answer = message.kind.value;
  const mode = inheritedMode(input.caller.lead.permissionMode);
  const stored = create(MessageSchema, {
    kind: {
      case: "planApprovalResponse",
      value: {
        requestId: answer.requestId,
        approve: answer.approve,
        feedback: answer.approve
          ? answer.feedback.trim()
          : answer.feedback.trim() || DEFAULT_REJECTION_FEEDBACK,
        permissionMode: answer.approve ? permissionModeToProto(mode) : PermissionMode.UNSPECIFIED,
      },
    },
  });
  return {
    message: stored,
    requestId: answer.requestId,
    beforeAppend: (tx) =>
      answerRequest(tx, {
        kind: "plan_approval",
        input,
        requestId: answer.requestId,
        approve: answer.approve,
        message: stored,
        onDecided: async (tx2, request) => {
          if (answer.approve) await setPermissionMode(tx2, request.fromId, mode);
        },
      }),
    afterCommit({ waiters }) {
      waiters.notify(answer.requestId);
    },
  };
}
