import { toBinary } from "@bufbuild/protobuf";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { messageAction } from "../domain/message-kinds.js";
import { APPROVER_ANSWERS } from "../domain/roles.js";
import { appendToInboxes, type Delivery } from "../store/send.js";
import type { SendCall, SendPlan } from "./protocol.js";

/**
 * An approver's answer, given on the lead's behalf (MEMBER_ROLE_APPROVER): the protocol's own
 * plan, plus a copy of the answer in the lead's inbox, stored in the same transaction, so the
 * lead hears what was decided in its name as the requester does. The request records who
 * answered (answered_by, request-lifecycle.ts) and the journal line names the lead
 * (on_behalf_of). Any other call's plan is returned unchanged.
 */
export function onBehalfOfLead(input: SendCall, plan: SendPlan): SendPlan {
  const { caller } = input;
  const messageCase = plan.message.kind.case;
  if (
    caller.role !== "approver" ||
    // Stryker disable next-line ConditionalExpression: a sent message always has a case (size-shape refuses an unset one), and an undefined case fails the APPROVER_ANSWERS test below all the same
    messageCase === undefined ||
    !APPROVER_ANSWERS.has(messageCase)
  ) {
    return plan;
  }
  let copy: Delivery | undefined;
  return {
    ...plan,
    onBehalfOf: caller.lead.name,
    async beforeCommit(tx, deliveries) {
      await plan.beforeCommit?.(tx, deliveries);
      [copy] = await appendToInboxes(
        tx,
        {
          teamId: caller.teamId,
          senderId: caller.id,
          fromName: caller.name,
          to: input.to,
          kind: messageAction(plan.message),
          body: toBinary(MessageSchema, plan.message),
          requestId: plan.requestId,
        },
        [{ id: caller.lead.id, name: caller.lead.name }],
      );
    },
    afterCommit(effects) {
      // Stryker disable next-line OptionalChaining: every plan of an approver's answer (plan-approval.ts, permission.ts, task-ownership.ts's answers) has an afterCommit
      plan.afterCommit?.(effects);
      // Stryker disable next-line ConditionalExpression: the copy is always stored (the lead is active): true is equivalent; its false twin, killed by the lead's open stream hearing the copy live, is disabled with it
      if (copy) effects.hub.wake([copy.memberId]);
    },
  };
}
