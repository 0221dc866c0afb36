import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { markStopped } from "../store/members.js";
import { stopMemberAndRelease } from "./member-stop.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { answerRequest, openRequestPlan } from "./request-lifecycle.js";
import { emptyAftermath, wakeAftermath } from "./task-ownership.js";

/**
 * Shutdown: the lead asks a teammate to stop, and the teammate decides.
 *
 * - Request: `shutdown_request` (optional reason), only from the lead (lead-only-shutdown),
 *   to one teammate (shutdown-to-teammate, no-broadcast). Opens a pending request with a
 *   deadline; the teammate receives it with the request_id.
 * - Answer: `shutdown_response` (request_id, approve, reason), only from that teammate
 *   (addressee-only), once (once-only), to the lead (response-to-lead), with a reason when
 *   rejecting (reason-on-reject).
 * - States: pending -> approved | rejected | expired | canceled.
 * - Approve: in the same transaction the request becomes approved, the teammate becomes
 *   stopped (its token is refused from then on), its other pending requests are canceled
 *   (the other party is told), the tasks it held become unowned (the lead gets a
 *   task_notification per task, member-stop.ts) and the approval lands in the lead's inbox;
 *   after the commit the teammate's streams end cleanly.
 * - Reject: the request becomes rejected, the lead receives the reason, and the teammate
 *   keeps working.
 */
export function planShutdownRequest(input: SendCall, message: Message): SendPlan {
  return openRequestPlan("shutdown", input, message);
}

export function planShutdownResponse(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "shutdownResponse") throw new Error("not a shutdown_response");
  const answer = message.kind.value;
  const stored = create(MessageSchema, {
    kind: {
      case: "shutdownResponse",
      value: { ...answer, reason: answer.reason.trim() },
    },
  });
  // The teammate's other pending requests canceled and tasks released when it stops (set in
  // the transaction).
  let aftermath = emptyAftermath();
  return {
    message: stored,
    requestId: answer.requestId,
    beforeAppend: (tx) =>
      answerRequest(tx, {
        kind: "shutdown",
        input,
        requestId: answer.requestId,
        approve: answer.approve,
        message: stored,
        onDecided: async (tx2) => {
          if (!answer.approve) return;
          ({ aftermath } = await stopMemberAndRelease(tx2, {
            teamId: input.caller.teamId,
            member: input.caller,
            lead: input.caller.lead,
            actorId: input.caller.id,
            why: "has shut down",
            stop: () => markStopped(tx2, input.caller.id),
          }));
        },
      }),
    afterCommit(effects) {
      effects.waiters.notify(answer.requestId);
      wakeAftermath(effects, aftermath);
      if (answer.approve) effects.hub.endMember(input.caller.id);
    },
  };
}
