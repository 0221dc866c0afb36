import type { Message } from "@team-protocols/contract/team/v1/message_pb.js";
import { RuleViolationError } from "../errors.js";
import type { Queryable } from "../store/database.js";
import {
  finishRequest,
  lockPendingRequestsOfTask,
  type RequestRow,
  taskIdOfRequest,
} from "../store/requests.js";
import { observerNotAddressable, unknownRecipient } from "../store/send.js";
import { dependentsOf, lockTaskGraph } from "../store/task-dependencies.js";
import { recordTaskEvents } from "../store/task-events.js";
import {
  lockActiveTeammate,
  lockTask,
  lockTasks,
  moveTask,
  type TaskMove,
  type TaskRow,
} from "../store/tasks.js";
import type { Effects, SendCall, SendPlan } from "./protocol.js";
import { answerRequest } from "./request-lifecycle.js";
import { deliverRequestUpdate } from "./request-updates.js";

/**
 * What the task protocols share: the refusals about a task's state (task-done, one-owner,
 * and who holds it), moving ownership, and what a move does to the task's other requests.
 *
 * Lock order, in every transaction that takes more than one: the team's task-graph lock
 * (only a transaction that changes dependencies or closes a task takes it), then task rows
 * (several in id order), then request rows (in id order), then member rows, then inboxes. An
 * answer finds its request's task first (unlocked), locks the task, then the request; a
 * stopping member locks its tasks before its requests (member-stop.ts); an approved sign-off
 * takes the graph lock, then its task and the tasks waiting on it, then the request.
 */

/** What a step changed besides its own request: for the wake-ups after commit. */
export interface Aftermath {
  /** Requests that left pending (waiters to wake). */
  requestIds: string[];
  /** Server-written messages stored (inboxes to wake). */
  deliveries: { memberId: number }[];
}

// A junk element is equivalent: its id wakes no waiter, its memberId (undefined) no inbox.
// Stryker disable next-line ArrayDeclaration: equivalent, see above
export const emptyAftermath = (): Aftermath => ({ requestIds: [], deliveries: [] });

/** The wake-ups an aftermath owes, after commit. */
export function wakeAftermath({ hub, waiters }: Effects, a: Aftermath): void {
  for (const id of a.requestIds) waiters.notify(id);
  hub.wake(a.deliveries.map((d) => d.memberId));
}

/**
 * task-deleted, then task-done: a deleted task, and a task whose result was signed off, are
 * final: nothing may claim, assign, hand off, sign off or change them.
 */
export function refuseIfClosed(task: TaskRow | undefined, field: string): void {
  if (task?.status === "deleted") {
    throw new RuleViolationError(
      "task-deleted",
      "failed-precondition",
      `task ${JSON.stringify(task.taskId)} was deleted by the lead: it cannot be claimed, ` +
        "assigned, handed off, signed off, changed or depended on",
      field,
    );
  }
  if (task?.state !== "done") return;
  throw new RuleViolationError(
    "task-done",
    "failed-precondition",
    `task ${JSON.stringify(task.taskId)} is done (its result by "${task.ownerName}" was signed off): ` +
      "it cannot be claimed, assigned, handed off, signed off, changed or deleted again",
    field,
  );
}

/**
 * task-blocked: a task is claimed or assigned only once nothing open blocks it, and its result
 * is signed off (asked for or approved) only then too, so no completed task waits on an open
 * one (the lead may make a held task wait after it was claimed).
 */
export function refuseIfBlocked(
  task: TaskRow,
  field: string,
  action: "claim" | "signoff" = "claim",
): void {
  if (task.openBlockers.length === 0) return;
  const names = task.openBlockers.map((id) => JSON.stringify(id)).join(", ");
  const those = task.openBlockers.length === 1 ? "that task is" : "those tasks are";
  throw new RuleViolationError(
    "task-blocked",
    "failed-precondition",
    `task ${JSON.stringify(task.taskId)} is blocked by ${names}, not yet completed: ` +
      (action === "claim"
        ? `it can be claimed or assigned once ${those} completed (ListTasks with ready lists what can be claimed now)`
        : `its result can be signed off once ${those} completed (or the lead removes the dependency: UpdateTask remove_blocked_by)`),
    field,
  );
}

/**
 * task-deleted, task-done, then one-owner, then task-blocked: a task may be claimed or
 * assigned only while nobody holds it, no claim of it is pending and nothing open blocks it.
 * The refusal names the owner, the pending claim or the blockers.
 */
export async function refuseUnlessClaimable(
  tx: Queryable,
  task: TaskRow,
  field: string,
): Promise<void> {
  refuseIfClosed(task, field);
  const id = JSON.stringify(task.taskId);
  if (task.state === "claimed") {
    throw new RuleViolationError(
      "one-owner",
      "failed-precondition",
      `task ${id} is held by "${task.ownerName}"; a task has one owner (the owner may hand it off)`,
      field,
    );
  }
  const claim = (await lockPendingRequestsOfTask(tx, task.teamId, task.taskId)).find(
    // An unowned task's only pending requests are claims (a handoff or sign-off needs an owner,
    // and every move of the owner cancels them): `true` is an equivalent mutant.
    // Stryker disable next-line ConditionalExpression: equivalent, see above
    (r) => r.kind === "task_claim",
  );
  if (claim) {
    throw new RuleViolationError(
      "one-owner",
      "failed-precondition",
      `task ${id} has a pending claim, request ${claim.id} by "${claim.fromName}", for the lead to answer first`,
      field,
    );
  }
  refuseIfBlocked(task, field);
}

/** The owner-only rules: the task must be held by the caller (and not be done). */
export function refuseUnlessOwner(
  task: TaskRow | undefined,
  taskId: string,
  caller: { id: number },
  rule: "owner-only-handoff" | "owner-only-signoff",
  field: string,
): TaskRow {
  refuseIfClosed(task, field);
  // The state test is redundant (an unowned task has no owner id; a done or deleted one was
  // refused above): its `true` mutant is equivalent, its `false` one killed.
  // Stryker disable next-line ConditionalExpression: equivalent, see above
  if (task && task.state === "claimed" && task.ownerId === caller.id) return task;
  const what = rule === "owner-only-handoff" ? "hand it off" : "ask for its sign-off";
  throw new RuleViolationError(
    rule,
    "permission-denied",
    `${
      task?.state === "claimed"
        ? `task ${JSON.stringify(taskId)} is held by "${task.ownerName}"`
        : `nobody holds task ${JSON.stringify(taskId)}`
    }; only its owner may ${what}`,
    field,
  );
}

/**
 * The member a task is given to, locked against stopping until commit (lockActiveTeammate):
 * it must be an active teammate, refused as a Send to it would be otherwise.
 */
export async function lockNewOwner(
  tx: Queryable,
  teamId: number,
  name: string,
): Promise<{ id: number; name: string }> {
  const member = await lockActiveTeammate(tx, teamId, name);
  // Without this test the send's own recipient check refuses an observer the same way, later in
  // the same transaction (rolled back): `false` and the emptied word are equivalent mutants.
  // Stryker disable next-line ConditionalExpression,StringLiteral: equivalent, see above
  if (member?.role === "observer") throw observerNotAddressable(name);
  if (member?.status !== "active") throw unknownRecipient(name, member !== undefined);
  return member;
}

/**
 * Moves a locked task to its new state and owner, and cancels the task's other pending
 * requests (a handoff pending while the result is signed off, a sign-off pending while the
 * task is handed off): they asked about an owner or a state that is gone. Each party of a
 * canceled request but the member making this change gets a request_update saying why.
 */
export async function moveTaskAndSettle(
  tx: Queryable,
  q: {
    task: TaskRow;
    to: TaskMove;
    /** The feed's word for the move: owner, completed or deleted. */
    change: "owner" | "completed" | "deleted";
    /** The request this change answers or records: not canceled ("" when none). */
    requestId: string;
    actorId: number;
    why: string;
    aftermath: Aftermath;
  },
): Promise<void> {
  // Stryker disable next-line BlockStatement: unreachable, as the comment below says
  if (!(await moveTask(tx, q.task, q.to))) {
    // The task's row lock is held: nothing can have moved it since it was read.
    // Stryker disable next-line StringLiteral: unreachable
    throw new Error(`task ${q.task.taskId} moved under its row lock`);
  }
  for (const other of await lockPendingRequestsOfTask(tx, q.task.teamId, q.task.taskId)) {
    // The request an answer answers has left pending before onYes runs (answerRequest), and
    // an assignment's is stored after this (beforeCommit): the list never holds it, so the
    // test is a safeguard and `false` an equivalent mutant (its `true` twin, which cancels
    // nothing, is killed; it goes with it).
    // Stryker disable next-line ConditionalExpression: equivalent, see above
    if (other.id === q.requestId) continue;
    await cancelForTask(tx, other, q.actorId, q.why, q.aftermath);
  }
  // After the cancellations: the event shows the task as the move left it (no sign-off
  // pending any more, so not in review).
  await recordTaskEvents(tx, q.task.teamId, [q.task.taskId], q.change, q.actorId);
}

async function cancelForTask(
  tx: Queryable,
  request: RequestRow,
  actorId: number,
  why: string,
  aftermath: Aftermath,
): Promise<void> {
  if (!(await finishRequest(tx, request.id, "canceled", null))) return;
  aftermath.requestIds.push(request.id);
  const detail = `request ${request.id} was canceled by the server: ${why}`;
  for (const party of ["requester", "addressee"] as const) {
    const id = party === "requester" ? request.fromId : request.toId;
    if (id === actorId) continue;
    const delivery = await deliverRequestUpdate(tx, request, "canceled", party, detail);
    // Both parties of a pending request are active (a stop cancels the member's pending
    // requests first), so there is always a delivery: `true` is equivalent; `false` is killed
    // (the addressee's open Subscribe hears the cancellation live).
    // Stryker disable next-line ConditionalExpression: equivalent, see above
    if (delivery) aftermath.deliveries.push(delivery);
  }
}

/**
 * The plan of an answer to a task protocol's request (task_claim, task_handoff,
 * result_signoff): inside the send's transaction the task's row is locked before the
 * request's, answerRequest checks the stateful rules and moves the request, and on a yes
 * `onYes` moves the locked task (collecting what else it changed); after commit the
 * request's waiters and every inbox written to are woken.
 */
export function taskAnswerPlan(q: {
  kind: "task_claim" | "task_handoff" | "result_signoff";
  input: SendCall;
  /** The answer as stored (trimmed). */
  message: Message;
  requestId: string;
  yes: boolean;
  /**
   * The answer closes the task on a yes (an approved sign-off): the team's task-graph lock
   * is taken first, and the tasks waiting on it are locked with it, in id order, before the
   * request (the lock order above), for onYes to unblock.
   */
  closes?: boolean;
  onYes: (tx: Queryable, request: RequestRow, task: TaskRow, aftermath: Aftermath) => Promise<void>;
}): SendPlan {
  const aftermath = emptyAftermath();
  const teamId = q.input.caller.teamId;
  return {
    message: q.message,
    requestId: q.requestId,
    async beforeAppend(tx) {
      const taskId = await taskIdOfRequest(tx, teamId, q.requestId);
      // No such request, or one of another protocol: answerRequest refuses it (unknown-request).
      // Taking the graph lock and the waiting tasks' rows for an answer that closes nothing (a
      // claim, a handoff, a rejection) only takes more locks, in the same order, and reads the
      // same row: `true` and `||` are equivalent mutants. `false` (no approved sign-off takes
      // the graph lock) is killed by the last two blockers signed off at once, and is
      // disabled with them.
      const task = taskId
        ? // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent, see above
          await lockAnsweredTask(tx, teamId, taskId, q.yes && q.closes)
        : undefined;
      await answerRequest(tx, {
        kind: q.kind,
        input: q.input,
        requestId: q.requestId,
        approve: q.yes,
        message: q.message,
        onDecided: async (tx2, request) => {
          if (!q.yes) return;
          // A task row is never deleted (a deleted task is a state) and every task request
          // names one: unreachable, so `false` and the message are equivalent mutants (the
          // `true` twin, which refuses every yes, is killed and goes with them).
          // Stryker disable next-line ConditionalExpression: unreachable, see above
          if (!task)
            // Stryker disable next-line StringLiteral: unreachable, see above
            throw new Error(`request ${request.id} names task ${taskId}, which has no row`);
          await q.onYes(tx2, request, task, aftermath);
        },
      });
    },
    afterCommit(effects) {
      effects.waiters.notify(q.requestId);
      wakeAftermath(effects, aftermath);
    },
  };
}

/**
 * The task an answer moves, locked. When the answer closes it, the team's task-graph lock
 * first, then the task and the tasks waiting on it in id order (they cannot change while the
 * graph lock is held).
 */
async function lockAnsweredTask(
  tx: Queryable,
  teamId: number,
  taskId: string,
  closes: boolean | undefined,
): Promise<TaskRow | undefined> {
  // Made `false`, every answer takes the graph lock and the waiting tasks' rows: more locks in
  // the same order, the same row read (an equivalent mutant); `true` is killed by the last
  // two blockers signed off at once, and goes with it.
  // Stryker disable next-line ConditionalExpression: equivalent, see above
  if (!closes) return lockTask(tx, teamId, taskId);
  await lockTaskGraph(tx, teamId);
  const rows = await lockTasks(tx, teamId, [taskId, ...(await dependentsOf(tx, teamId, taskId))]);
  return rows.find((t) => t.taskId === taskId);
}
