import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { lockTask } from "../store/tasks.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { openRequestPlan } from "./request-lifecycle.js";
import {
  moveTaskAndSettle,
  refuseIfBlocked,
  refuseUnlessOwner,
  taskAnswerPlan,
} from "./task-ownership.js";
import { unblockDependents } from "./task-readiness.js";

/**
 * Result sign-off: a task's owner asks the lead to accept its result.
 *
 * - Request: `result_signoff_request` (task_id, result, optional summary), only from the
 *   task's owner (owner-only-signoff; a done task: task-done), to the lead (signoff-to-lead),
 *   only while nothing open blocks the task (task-blocked; checked again at the approval, as
 *   the lead may add a dependency meanwhile): a completed task never waits on an open one.
 * - Answer: `result_signoff_response` (request_id, approve, feedback), only from the lead
 *   (lead-only-signoff, addressee-only), once (once-only), to the owner who asked
 *   (response-to-requester), with feedback when rejecting (feedback-on-reject).
 * - States: pending -> approved | rejected | expired | canceled.
 * - Approve: in the same transaction the task is done (completed), its owner recorded as the
 *   one whose result it was; its other pending requests (a handoff racing the sign-off) are
 *   canceled and their parties told; the tasks waiting on it are unblocked, and each that is
 *   now ready is announced to the lead (task-readiness.ts). A done task is final: no claim,
 *   assignment, handoff or sign-off.
 * - While the request is pending the task reads in_review.
 * - Reject or expiry: the owner keeps the task (and acts on the feedback).
 */
export function planResultSignoffRequest(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "resultSignoffRequest") throw new Error("not a result_signoff_request");
  const { taskId } = message.kind.value;
  return openRequestPlan("result_signoff", input, message, {
    taskId,
    async beforeAppend(tx) {
      const task = await lockTask(tx, input.caller.teamId, taskId);
      refuseUnlessOwner(
        task,
        taskId,
        input.caller,
        "owner-only-signoff",
        "message.result_signoff_request.task_id",
      );
      if (task) refuseIfBlocked(task, "message.result_signoff_request.task_id", "signoff");
    },
  });
}

export function planResultSignoffResponse(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "resultSignoffResponse") {
    // Stryker disable next-line StringLiteral: unreachable, as the guard above says
    throw new Error("not a result_signoff_response");
  }
  const answer = message.kind.value;
  const stored = create(MessageSchema, {
    kind: {
      case: "resultSignoffResponse",
      value: { ...answer, feedback: answer.feedback.trim() },
    },
  });
  return taskAnswerPlan({
    kind: "result_signoff",
    input,
    message: stored,
    requestId: answer.requestId,
    yes: answer.approve,
    closes: true,
    async onYes(tx, request, task, aftermath) {
      // A change of owner cancels the task's pending sign-offs (moveTaskAndSettle), and so
      // does the owner's stop: an answerable sign-off always comes from the current owner. The
      // guard is unreachable, so `false`, the emptied block and the emptied message are
      // equivalent mutants (the `true` twin, killed by any approval, goes with them).
      // Stryker disable next-line ConditionalExpression,BlockStatement: unreachable, see above
      if (task.ownerId !== request.fromId) {
        // Stryker disable next-line StringLiteral: unreachable, see above
        throw new Error(`sign-off ${request.id} is pending but its task moved`);
      }
      // The lead may have made the task wait on another since the owner asked.
      refuseIfBlocked(task, "message.result_signoff_response.request_id", "signoff");
      await moveTaskAndSettle(tx, {
        task,
        to: { state: "done", ownerId: request.fromId, status: "completed" },
        change: "completed",
        requestId: request.id,
        actorId: input.caller.id,
        why: `the result of task ${JSON.stringify(task.taskId)} was signed off: the task is done`,
        aftermath,
      });
      await unblockDependents(tx, {
        teamId: input.caller.teamId,
        closed: task,
        how: "completed",
        actorId: input.caller.id,
        lead: input.caller.lead,
        aftermath,
      });
    },
  });
}
