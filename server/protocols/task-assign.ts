import { toBinary } from "@bufbuild/protobuf";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { recordApprovedRequest } from "../store/requests.js";
import { lockTask } from "../store/tasks.js";
import type { SendCall, SendPlan } from "./protocol.js";
import { newRequestId } from "./request-lifecycle.js";
import {
  emptyAftermath,
  lockNewOwner,
  moveTaskAndSettle,
  refuseUnlessClaimable,
  wakeAftermath,
} from "./task-ownership.js";

/**
 * Task assignment: the lead gives a task to a teammate directly, without a claim.
 *
 * - Who: only the lead (lead-only-assign), to an active teammate, the Send's `to`
 *   (assign-to-teammate, known-recipient, observer-not-addressable), never "*".
 * - Refused like a claim: while the task is deleted (task-deleted) or done (task-done), has an
 *   owner or a pending claim (one-owner), or waits on an open task (task-blocked). The first
 *   assignment of an id records the task. The task is pending until its owner starts it.
 * - Recorded as a task_assign request that is approved as it is made (resolved at creation),
 *   so it is in the task's history, ListRequests, the journal and the team feed; nobody
 *   answers it. The teammate receives the task_assign with its request_id.
 */
export function planTaskAssign(input: SendCall, message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "taskAssign") throw new Error("not a task_assign");
  const { taskId } = message.kind.value;
  const requestId = newRequestId();
  const aftermath = emptyAftermath();
  let ownerId = 0;
  return {
    message,
    requestId,
    async beforeAppend(tx) {
      const teamId = input.caller.teamId;
      const task = await lockTask(tx, teamId, taskId, { record: { by: input.caller.id } });
      // With `record`, lockTask inserts the row first, and a task row is never deleted (a
      // deleted task is a state): no call reaches the throw, which narrows the type.
      // Stryker disable next-line ConditionalExpression,BlockStatement,StringLiteral: unreachable
      if (!task) throw new Error(`task ${taskId} not recorded`);
      await refuseUnlessClaimable(tx, task, "message.task_assign.task_id");
      const owner = await lockNewOwner(tx, teamId, input.to);
      ownerId = owner.id;
      await moveTaskAndSettle(tx, {
        task,
        // Given, not yet begun: the owner marks it in_progress (UpdateTask).
        to: { state: "claimed", ownerId, status: "pending" },
        change: "owner",
        requestId,
        actorId: input.caller.id,
        // Read only by a cancellation of the task's other pending requests, and a claimable
        // task has none (a claim is refused by one-owner, a handoff or sign-off needs an owner,
        // and a stop or a deletion cancels them): an equivalent mutant.
        // Stryker disable next-line StringLiteral: equivalent; no request is left to cancel
        why: `task ${JSON.stringify(taskId)} was assigned to "${owner.name}"`,
        aftermath,
      });
    },
    async beforeCommit(tx) {
      await recordApprovedRequest(tx, {
        id: requestId,
        teamId: input.caller.teamId,
        kind: "task_assign",
        fromId: input.caller.id,
        toId: ownerId,
        body: toBinary(MessageSchema, message),
        taskId,
      });
    },
    // Nobody can wait on an assignment's request before it commits (its id is new, and it is
    // resolved at creation), and its aftermath stays empty (a claimable task has no other
    // pending request to cancel); the assignee's inbox is woken by the send itself.
    // Stryker disable next-line BlockStatement: equivalent; nothing to wake
    afterCommit(effects) {
      effects.waiters.notify(requestId);
      wakeAftermath(effects, aftermath);
    },
  };
}
