import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "../../gen/team/v1/message_pb.js";
import { markStopped } from "../store/members.js";
import { cancelRequestsOfStoppingMember } from "./cancel.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { answerRequest, openRequestPlan } from "./request-lifecycle.js";

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
 *   (the other party is told) and the approval lands in the lead's inbox; after the commit
 *   the teammate's streams end cleanly.
 * - Reject: the request becomes rejected, the lead receives the reason, and the teammate
 *   keeps working.
 */
export function planShutdownRequest(input: SendCall, message: Message): SendPlan {
  return openRequestPlan("shutdown", input, message);
}

export function planShutdownResponse(input: SendCall, message: Message): SendPlan {
  if (message.kind.case !== "shutdownResponse") throw new Error("not a shutdown_response");
  const answer = message.kind.value;
  const stored = create(MessageSchema, {
    kind: {
      case: "shutdownResponse",
      value: { ...answer, reason: answer.reason.trim() },
    },
  });
  // The teammate's other pending requests, canceled when it stops (set in the transaction).
  let canceled: Awaited<ReturnType<typeof cancelRequestsOfStoppingMember>> = {
    requestIds: [],
    deliveries: [],
  };
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
          canceled = await cancelRequestsOfStoppingMember(tx2, input.caller, "has shut down");
          await markStopped(tx2, input.caller.id);
        },
      }),
    afterCommit({ hub, waiters }) {
      waiters.notify(answer.requestId);
      for (const id of canceled.requestIds) waiters.notify(id);
      hub.wake(canceled.deliveries.map((d) => d.memberId));
      if (answer.approve) hub.endMember(input.caller.id);
    },
  };
}
