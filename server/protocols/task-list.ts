import type { Caller } from "../caller.js";
import { cycleThrough, cycleWords, type TaskEdge } from "../domain/task-graph.js";
import type { StoredTaskProgress } from "../domain/words.js";
import { DomainError, RuleViolationError } from "../errors.js";
import type { Queryable } from "../store/database.js";
import {
  addEdges,
  dependentsOf,
  lockTaskGraph,
  removeEdges,
  teamEdges,
  unusableTasks,
} from "../store/task-dependencies.js";
import { recordTaskEvents } from "../store/task-events.js";
import { changeTaskFields, insertTask } from "../store/task-records.js";
import { findTask, lockTask, lockTasks, type TaskRow } from "../store/tasks.js";
import {
  type Aftermath,
  emptyAftermath,
  moveTaskAndSettle,
  refuseIfClosed,
} from "./task-ownership.js";
import { unblockDependents } from "./task-readiness.js";

/**
 * The task list's own calls: CreateTask, UpdateTask and DeleteTask, each inside one
 * transaction the handler opens (docs/architecture.md, "The task list").
 *
 * - Who: any member but an observer creates (observer-read-only); the lead changes anything,
 *   deletes, and alone changes dependencies; a task's owner changes its own subject,
 *   description and active form and sets it pending or in_progress (owner-or-lead-updates:
 *   the parts a call shows by itself are refused by the rules table, the rest here). Nobody
 *   sets completed or in_review (signoff-completes, in the rules table): the sign-off
 *   protocol does.
 * - Refusals here, each under the row locks: an unknown task (NotFound), a deleted one
 *   (task-deleted), a completed one (task-done), a dependency naming no live task of the team
 *   (task-exists), a dependency that would close a cycle (no-cycle, naming it). A refusal
 *   rolls the whole call back: nothing of it is stored.
 * - Locks: a call that changes dependencies or deletes takes the team's task-graph lock
 *   first, then the task rows it changes in id order (the deleted task and those waiting on
 *   it); an edit of a task's own fields locks that one row.
 * - Effects: the changed rows, one task event each; a deletion cancels the task's pending
 *   requests (their parties told) and unblocks the tasks waiting on it (task-readiness.ts).
 */

export interface NewTaskInput {
  taskId: string | undefined;
  subject: string;
  description: string;
  activeForm: string;
  blockedBy: string[];
}

export interface TaskUpdateInput {
  taskId: string;
  subject: string | undefined;
  description: string | undefined;
  activeForm: string | undefined;
  addBlockedBy: string[];
  removeBlockedBy: string[];
  addBlocks: string[];
  removeBlocks: string[];
  /** pending or in_progress (deleted goes to deleteTask; the rest the rules table refused). */
  status: Extract<StoredTaskProgress, "pending" | "in_progress"> | undefined;
}

// Stryker disable next-line MethodExpression: the sort is equivalent where these lists go: queries by = ANY, row locks taken in id order by lockTasks' own statement, unusableTasks sorting its answer itself, and edge inserts serialized by the team's task-graph lock
const unique = (ids: readonly string[]) => [...new Set(ids)].sort();
const quoted = (ids: readonly string[]) => ids.map((id) => JSON.stringify(id)).join(", ");

/** CreateTask: the new task as stored. */
export async function createTask(
  tx: Queryable,
  caller: Caller,
  input: NewTaskInput,
): Promise<TaskRow> {
  const blockedBy = unique(input.blockedBy);
  if (blockedBy.length > 0) await lockTaskGraph(tx, caller.teamId);
  // Stryker disable next-line ConditionalExpression: the undefined test made true is equivalent (blocked_by holds strings, never undefined)
  if (input.taskId !== undefined && blockedBy.includes(input.taskId)) {
    throw cycleRefusal([input.taskId, input.taskId], "blocked_by");
  }
  await refuseUnlessLive(tx, caller.teamId, blockedBy, "blocked_by");
  const taskId = await insertTask(tx, {
    teamId: caller.teamId,
    taskId: input.taskId,
    subject: input.subject,
    description: input.description,
    activeForm: input.activeForm,
    createdBy: caller.id,
  });
  if (taskId === undefined) {
    throw new DomainError(
      "already-exists",
      `task ${JSON.stringify(input.taskId)} exists already in this team: change it with UpdateTask, or leave task_id unset for a new number`,
    );
  }
  await addEdges(
    tx,
    caller.teamId,
    blockedBy.map((b) => ({ taskId, blockedBy: b })),
  );
  await recordTaskEvents(tx, caller.teamId, [taskId], "created", caller.id);
  return loaded(tx, caller.teamId, taskId);
}

/** UpdateTask (but deletion): the task after the change. */
export async function updateTask(
  tx: Queryable,
  caller: Caller,
  u: TaskUpdateInput,
): Promise<TaskRow> {
  const addBlockedBy = unique(u.addBlockedBy);
  const addBlocks = unique(u.addBlocks);
  const removeBlocks = unique(u.removeBlocks);
  const graph =
    // Stryker disable next-line ConditionalExpression,EqualityOperator: graph made true (or >= 0) only takes the graph path for an edit of the task's own fields: the task-graph lock and lockTasks of that one row instead of lockTask, then edge changes of empty lists; the same row and result
    addBlockedBy.length + u.removeBlockedBy.length + addBlocks.length + removeBlocks.length > 0;
  // Stryker disable next-line MethodExpression,ConditionalExpression: duplicates or the task itself in others change nothing: lockTasks reads ids with = ANY, and changed is a set that holds the task already
  const others = unique([...addBlocks, ...removeBlocks]).filter((id) => id !== u.taskId);
  let rows: TaskRow[];
  // Stryker disable next-line ConditionalExpression: made true, an edit of own fields locks its row through the graph path (see graph above): the same row
  if (graph) {
    await lockTaskGraph(tx, caller.teamId);
    rows = await lockTasks(tx, caller.teamId, [u.taskId, ...others]);
  } else {
    const row = await lockTask(tx, caller.teamId, u.taskId);
    // Stryker disable next-line ArrayDeclaration: a junk element in place of no row is no task either (find by taskId misses it): the same NotFound
    rows = row ? [row] : [];
  }
  const task = rows.find((t) => t.taskId === u.taskId);
  if (!task) throw noTask(u.taskId);
  refuseIfClosed(task, "task_id");
  refuseUnlessOwnerOrLead(task, caller);

  const changed = new Set<string>([task.taskId]);
  // Stryker disable next-line ConditionalExpression: made true with no dependency change, every list in the block is empty: no refusal, no edge, no other task
  if (graph) {
    if (addBlockedBy.includes(task.taskId) || addBlocks.includes(task.taskId)) {
      throw cycleRefusal(
        [task.taskId, task.taskId],
        addBlockedBy.includes(task.taskId) ? "add_blocked_by" : "add_blocks",
      );
    }
    await refuseUnlessLive(tx, caller.teamId, addBlockedBy, "add_blocked_by");
    // Tasks that will wait on this one: live, and not completed (a completed task is final).
    const waiting = addBlocks.map((id) => rows.find((t) => t.taskId === id));
    await refuseUnlessLive(tx, caller.teamId, addBlocks, "add_blocks");
    for (const t of waiting) refuseIfClosed(t, "add_blocks");

    const added: TaskEdge[] = [
      ...addBlockedBy.map((b) => ({ taskId: task.taskId, blockedBy: b })),
      ...addBlocks.map((t) => ({ taskId: t, blockedBy: task.taskId })),
    ];
    await removeEdges(tx, caller.teamId, [
      ...u.removeBlockedBy.map((b) => ({ taskId: task.taskId, blockedBy: b })),
      ...removeBlocks.map((t) => ({ taskId: t, blockedBy: task.taskId })),
    ]);
    await addEdges(tx, caller.teamId, added);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: with no new edge, the stored graph has no cycle (each edge was checked when added): the search finds none
    if (added.length > 0) {
      // Every new edge touches this task, so any cycle they close runs through it.
      const cycle = cycleThrough(await teamEdges(tx, caller.teamId), task.taskId);
      if (cycle) {
        throw cycleRefusal(cycle, addBlockedBy.length > 0 ? "add_blocked_by" : "add_blocks");
      }
    }
    for (const id of others) changed.add(id);
  }
  for (const id of changed) {
    await changeTaskFields(
      tx,
      caller.teamId,
      id,
      id === task.taskId
        ? {
            subject: u.subject,
            description: u.description,
            activeForm: u.activeForm,
            status: u.status,
          }
        : {},
    );
  }
  // Stryker disable next-line MethodExpression: recordTaskEvents inserts the events ORDER BY task_id whatever the order given (the test "in id order" of task-list-flows pins the feed's order)
  await recordTaskEvents(tx, caller.teamId, [...changed].sort(), "updated", caller.id);
  return loaded(tx, caller.teamId, task.taskId);
}

/**
 * DeleteTask (and UpdateTask with status deleted), the lead's: the task is deleted, its owner
 * loses it, its pending requests are canceled, and the tasks waiting on it are unblocked.
 */
export async function deleteTask(
  tx: Queryable,
  caller: Caller,
  taskId: string,
): Promise<{ task: TaskRow; aftermath: Aftermath }> {
  await lockTaskGraph(tx, caller.teamId);
  const rows = await lockTasks(tx, caller.teamId, [
    taskId,
    ...(await dependentsOf(tx, caller.teamId, taskId)),
  ]);
  const task = rows.find((t) => t.taskId === taskId);
  if (!task) throw noTask(taskId);
  refuseIfClosed(task, "task_id");
  const aftermath = emptyAftermath();
  await moveTaskAndSettle(tx, {
    task,
    to: { state: "unowned", ownerId: null, status: "deleted" },
    change: "deleted",
    // Stryker disable next-line StringLiteral: the id of the request that moved the task, skipped when canceling its pending ones; no request has "" or any other made-up id
    requestId: "",
    actorId: caller.id,
    why: `task ${JSON.stringify(taskId)} was deleted by the lead`,
    aftermath,
  });
  await unblockDependents(tx, {
    teamId: caller.teamId,
    closed: task,
    how: "deleted",
    actorId: caller.id,
    lead: caller.lead,
    aftermath,
  });
  return { task: await loaded(tx, caller.teamId, taskId), aftermath };
}

/**
 * owner-or-lead-updates, the part that needs the row: a teammate changes only a task it
 * holds. (Only the lead deletes or changes dependencies, and only an owner starts or pauses:
 * the rules table refuses those by the call alone.)
 */
function refuseUnlessOwnerOrLead(task: TaskRow, caller: Caller): void {
  if (caller.role === "lead") return;
  // Stryker disable next-line ConditionalExpression: only a done task has an owner without being claimed, and refuseIfClosed refused it before (task-done)
  if (task.state === "claimed" && task.ownerId === caller.id) return;
  throw new RuleViolationError(
    "owner-or-lead-updates",
    "permission-denied",
    `${
      task.state === "claimed"
        ? `task ${JSON.stringify(task.taskId)} is held by "${task.ownerName}"`
        : `nobody holds task ${JSON.stringify(task.taskId)} (claim it first: task_claim_request to the lead)`
    }; only its owner or the lead may change it`,
    "task_id",
  );
}

/** task-exists: dependencies name tasks of the team that are not deleted. */
async function refuseUnlessLive(
  tx: Queryable,
  teamId: number,
  ids: readonly string[],
  field: string,
): Promise<void> {
  // Stryker disable next-line ConditionalExpression: an empty list finds nothing missing or deleted: the test only spares a query
  if (ids.length === 0) return;
  const { missing, deleted } = await unusableTasks(tx, teamId, ids);
  if (missing.length === 0 && deleted.length === 0) return;
  const parts = [
    ...(missing.length > 0 ? [`no task ${quoted(missing)} in this team`] : []),
    ...(deleted.length > 0 ? [`task ${quoted(deleted)} was deleted`] : []),
  ];
  throw new RuleViolationError(
    "task-exists",
    "not-found",
    `${parts.join("; ")}: a dependency names a task of the team that is not deleted (CreateTask makes one)`,
    field,
  );
}

/** no-cycle: the refusal, naming the cycle the dependency would close. */
function cycleRefusal(cycle: readonly string[], field: string): RuleViolationError {
  return new RuleViolationError(
    "no-cycle",
    "failed-precondition",
    cycle.length <= 2
      ? `task ${JSON.stringify(cycle[0])} cannot wait on itself`
      : `this would close the cycle ${cycleWords(cycle)} (each waits on the next): nothing was changed`,
    field,
  );
}

const noTask = (taskId: string) =>
  new DomainError(
    "not-found",
    `no task ${JSON.stringify(taskId)} in this team: CreateTask makes one (a claim or an assignment records one too)`,
  );

async function loaded(tx: Queryable, teamId: number, taskId: string): Promise<TaskRow> {
  const task = await findTask(tx, teamId, taskId);
  // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable: the row was inserted or locked earlier in the same transaction
  if (!task) throw new Error(`task ${taskId} vanished inside its own transaction`);
  return task;
}
