import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { lockTask } from "../store/tasks.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { openRequestPlan } from "./request-lifecycle.js";
import {
  lockNewOwner,
  moveTaskAndSettle,
  refuseUnlessOwner,
  taskAnswerPlan,
} from "./task-ownership.js";

/**
 * Task handoff: a task's owner passes it to another active teammate, or gives it back to the
 * lead.
 *
 * - Request: `task_handoff_request` (task_id, note), only from the task's owner
 *   (owner-only-handoff; a done task: task-done), to one other member (handoff-to-other,
 *   no-broadcast), who must be active and not an observer (known-recipient,
 *   observer-not-addressable).
 * - Answer: `task_handoff_response` (request_id, accept, reason), only from the addressee
 *   (addressee-only), once (once-only), to the owner who asked (response-to-requester), with
 *   a reason when declining (reason-on-reject).
 * - States: pending -> approved (accepted) | rejected | expired | canceled.
 * - Accept: in the same transaction the task moves to the addressee, or, when the addressee
 *   is the lead, becomes unowned; the task's other pending requests are canceled (their
 *   parties are told). Decline or expiry: the owner keeps the task.
 */
export function planTaskHandoffRequest(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "taskHandoffRequest") throw new Error("not a task_handoff_request");
  const { taskId } = message.kind.value;
  return openRequestPlan("task_handoff", input, message, {
    taskId,
    async beforeAppend(tx) {
      const task = await lockTask(tx, input.caller.teamId, taskId);
      refuseUnlessOwner(
        task,
        taskId,
        input.caller,
        "owner-only-handoff",
        "message.task_handoff_request.task_id",
      );
    },
  });
}

export function planTaskHandoffResponse(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "taskHandoffResponse") throw new Error("not a task_handoff_response");
  const answer = message.kind.value;
  const stored = create(MessageSchema, {
    kind: { case: "taskHandoffResponse", value: { ...answer, reason: answer.reason.trim() } },
  });
  const toLead = input.caller.role === "lead";
  return taskAnswerPlan({
    kind: "task_handoff",
    input,
    message: stored,
    requestId: answer.requestId,
    yes: answer.accept,
    async onYes(tx, request, task, aftermath) {
      // A change of owner cancels the task's pending handoffs (moveTaskAndSettle), and so
      // does the owner's stop: an answerable handoff always comes from the current owner. The
      // guard is unreachable, so `false`, the emptied block and the emptied message are
      // equivalent mutants (the `true` twin, killed by any acceptance, goes with them).
      // Stryker disable next-line ConditionalExpression,BlockStatement: unreachable, see above
      if (task.ownerId !== request.fromId) {
        // Stryker disable next-line StringLiteral: unreachable, see above
        throw new Error(`handoff ${request.id} is pending but its task moved`);
      }
      const owner = toLead
        ? undefined
        : await lockNewOwner(tx, input.caller.teamId, input.caller.name);
      await moveTaskAndSettle(tx, {
        task,
        // A new owner takes the work as it stands; given back, it waits for the next one.
        to: owner
          ? { state: "claimed", ownerId: owner.id, status: task.storedStatus }
          : { state: "unowned", ownerId: null, status: "pending" },
        change: "owner",
        requestId: request.id,
        actorId: input.caller.id,
        why: owner
          ? `task ${JSON.stringify(task.taskId)} was handed off to "${owner.name}"`
          : `task ${JSON.stringify(task.taskId)} was given back to the lead and is unowned`,
        aftermath,
      });
    },
  });
}
