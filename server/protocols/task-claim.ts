import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { lockTask } from "../store/tasks.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { openRequestPlan } from "./request-lifecycle.js";
import {
  lockNewOwner,
  moveTaskAndSettle,
  refuseIfBlocked,
  refuseUnlessClaimable,
  taskAnswerPlan,
} from "./task-ownership.js";

/**
 * Task claim: a teammate asks the lead for a task; on approval it becomes the task's owner.
 *
 * - Request: `task_claim_request` (task_id, optional note), from a teammate to the lead
 *   (claim-to-lead, no-broadcast). The first claim (or assignment) of an id records the task.
 *   Refused while the task is deleted (task-deleted) or done (task-done), has an owner or
 *   another pending claim (one-owner, naming them), or waits on an open task (task-blocked,
 *   naming the blockers): under the task's row lock, so of racing claims exactly one is
 *   pending at a time.
 * - Answer: `task_claim_response` (request_id, approve, reason), only from the lead
 *   (lead-only-assign, addressee-only), once (once-only), to the requester
 *   (response-to-requester), with a reason when rejecting (reason-on-reject).
 * - States: pending -> approved | rejected | expired | canceled.
 * - Approve: in the same transaction the requester becomes the owner (task claimed, status
 *   in_progress), checked to be still active under its member row lock; refused (task-blocked)
 *   if a dependency added meanwhile blocks the task. Reject or expiry: the task stays unowned
 *   and may be claimed again.
 */
export function planTaskClaimRequest(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "taskClaimRequest") throw new Error("not a task_claim_request");
  const { taskId } = message.kind.value;
  return openRequestPlan("task_claim", input, message, {
    taskId,
    async beforeAppend(tx) {
      const task = await lockTask(tx, input.caller.teamId, taskId, {
        record: { by: input.caller.id },
      });
      // With `record`, lockTask inserts the row first, and a task row is never deleted (a
      // deleted task is a state): no call reaches the throw, which narrows the type.
      // Stryker disable next-line ConditionalExpression,BlockStatement,StringLiteral: unreachable
      if (!task) throw new Error(`task ${taskId} not recorded`);
      await refuseUnlessClaimable(tx, task, "message.task_claim_request.task_id");
    },
  });
}

export function planTaskClaimResponse(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "taskClaimResponse") throw new Error("not a task_claim_response");
  const answer = message.kind.value;
  const stored = create(MessageSchema, {
    kind: { case: "taskClaimResponse", value: { ...answer, reason: answer.reason.trim() } },
  });
  return taskAnswerPlan({
    kind: "task_claim",
    input,
    message: stored,
    requestId: answer.requestId,
    yes: answer.approve,
    async onYes(tx, request, task, aftermath) {
      // A dependency added while the claim was pending blocks the approval too.
      refuseIfBlocked(task, "message.task_claim_response.request_id");
      const owner = await lockNewOwner(tx, input.caller.teamId, request.fromName);
      await moveTaskAndSettle(tx, {
        task,
        // The claimant asked for it to work on it: it is in progress from now on.
        to: { state: "claimed", ownerId: owner.id, status: "in_progress" },
        change: "owner",
        requestId: request.id,
        actorId: input.caller.id,
        // Read only by a cancellation of the task's other pending requests, and an approved
        // claim is its task's only one (one-owner refuses a second claim or an assignment; a
        // handoff or sign-off needs an owner): an equivalent mutant.
        // Stryker disable next-line StringLiteral: equivalent; no request is left to cancel
        why: `task ${JSON.stringify(task.taskId)} was given to "${owner.name}"`,
        aftermath,
      });
    },
  });
}
