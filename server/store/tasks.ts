import type { TaskState } from "../domain/words.js";
import type { Queryable } from "./database.js";

export type { TaskState };

/**
 * The tasks table (migration 007): who holds which task id. Every change of a task happens
 * under its row lock, taken first in the transaction that changes it (lockTask), so racing
 * claims, handoffs and sign-offs of one task are decided one after the other; the updates
 * are compare-and-set on top of that, so a caller that skipped the lock still could not
 * move a task it did not see.
 */
export interface TaskRow {
  teamId: number;
  teamName: string;
  taskId: string;
  state: TaskState;
  ownerId: number | null;
  /** "" while unowned. */
  ownerName: string;
  createdAt: Date;
  updatedAt: Date;
  /** ListTasks' page cursor: drawn anew at each change. */
  change: bigint;
}

interface TaskSqlRow {
  team_id: number;
  team_name: string;
  task_id: string;
  state: TaskState;
  owner_id: number | null;
  owner_name: string | null;
  created_at: Date;
  updated_at: Date;
  change: bigint;
}

const taskColumns = `k.team_id, t.name AS team_name, k.task_id, k.state, k.owner_id,
  o.name AS owner_name, k.created_at, k.updated_at, k.change`;

const taskJoins =
  "tasks k JOIN teams t ON t.id = k.team_id LEFT JOIN members o ON o.id = k.owner_id";

const toTask = (r: TaskSqlRow): TaskRow => ({
  teamId: r.team_id,
  teamName: r.team_name,
  taskId: r.task_id,
  state: r.state,
  ownerId: r.owner_id,
  ownerName: r.owner_name ?? "",
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  change: r.change,
});

/**
 * Locks a task's row for the rest of the transaction. With `record`, a task id seen for the
 * first time is recorded (unowned) first: the insert and the lock are one statement each, and
 * concurrent first claims of one id meet on the primary key, so exactly one inserts it and
 * the others wait for that row. Without `record`, an unknown id is undefined.
 */
export async function lockTask(
  tx: Queryable,
  teamId: number,
  taskId: string,
  options: { record?: boolean } = {},
): Promise<TaskRow | undefined> {
  if (options.record) {
    await tx.query(
      "INSERT INTO tasks (team_id, task_id) VALUES ($1, $2) ON CONFLICT (team_id, task_id) DO NOTHING",
      [teamId, taskId],
    );
  }
  const [row] = await tx.query<TaskSqlRow>(
    `SELECT ${taskColumns} FROM ${taskJoins}
     WHERE k.team_id = $1 AND k.task_id = $2 FOR UPDATE OF k`,
    [teamId, taskId],
  );
  return row ? toTask(row) : undefined;
}

/**
 * Moves a task to a new state and owner, if it is still as the caller found it
 * (compare-and-set on state and owner). Returns false when it had moved meanwhile.
 */
export async function moveTask(
  tx: Queryable,
  task: Pick<TaskRow, "teamId" | "taskId" | "state" | "ownerId">,
  to: { state: TaskState; ownerId: number | null },
): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE tasks SET state = $5, owner_id = $6, updated_at = clock_timestamp(),
       change = nextval('task_changes')
     WHERE team_id = $1 AND task_id = $2 AND state = $3 AND owner_id IS NOT DISTINCT FROM $4
     RETURNING 1`,
    [task.teamId, task.taskId, task.state, task.ownerId, to.state, to.ownerId],
  );
  return rows.length === 1;
}

/**
 * Locks the tasks a member holds, in id order (a stopping member's, before its requests are
 * locked: task rows come before request rows in every transaction that takes both).
 */
export async function lockTasksOwnedBy(tx: Queryable, memberId: number): Promise<TaskRow[]> {
  const rows = await tx.query<TaskSqlRow>(
    `SELECT ${taskColumns} FROM ${taskJoins}
     WHERE k.owner_id = $1 AND k.state = 'claimed' ORDER BY k.task_id FOR UPDATE OF k`,
    [memberId],
  );
  return rows.map(toTask);
}

/**
 * Gives back every task a stopped member held: claimed becomes unowned. A statement of its
 * own, run after the member row changed, so it also sees a task the member was given by a
 * transaction that committed while this one waited. Returns the task ids.
 */
export async function releaseTasksOf(tx: Queryable, memberId: number): Promise<string[]> {
  const rows = await tx.query<{ task_id: string }>(
    `UPDATE tasks SET state = 'unowned', owner_id = NULL, updated_at = clock_timestamp(),
       change = nextval('task_changes')
     WHERE owner_id = $1 AND state = 'claimed'
     RETURNING task_id`,
    [memberId],
  );
  return rows.map((r) => r.task_id).sort();
}

/** One task of a team, unlocked; undefined when the id was never recorded. */
export async function findTask(
  db: Queryable,
  teamId: number,
  taskId: string,
): Promise<TaskRow | undefined> {
  const [row] = await db.query<TaskSqlRow>(
    `SELECT ${taskColumns} FROM ${taskJoins} WHERE k.team_id = $1 AND k.task_id = $2`,
    [teamId, taskId],
  );
  return row ? toTask(row) : undefined;
}

export interface TaskFilter {
  teamId: number;
  /** Only tasks this member holds or held when done. */
  ownerId?: number | undefined;
  /** A teammate's view: its own tasks and the unowned ones. */
  visibleTo?: number | undefined;
  state?: TaskState | undefined;
  /** Keyset: tasks whose last change came before this one. */
  beforeChange?: bigint | undefined;
  limit: number;
}

/** A team's tasks, most recently changed first. */
export async function listTasks(db: Queryable, f: TaskFilter): Promise<TaskRow[]> {
  // Unset filters are NULL and switch themselves off: one statement text for every filter.
  const rows = await db.query<TaskSqlRow>(
    `SELECT ${taskColumns} FROM ${taskJoins}
     WHERE k.team_id = $1
       AND ($2::int IS NULL OR k.owner_id = $2)
       AND ($3::int IS NULL OR k.owner_id = $3 OR k.state = 'unowned')
       AND ($4::text IS NULL OR k.state = $4)
       AND ($5::bigint IS NULL OR k.change < $5)
     ORDER BY k.change DESC
     LIMIT $6`,
    [
      f.teamId,
      f.ownerId ?? null,
      f.visibleTo ?? null,
      f.state ?? null,
      f.beforeChange ?? null,
      f.limit,
    ],
  );
  return rows.map(toTask);
}

/**
 * Locks a member row against being stopped until this transaction ends, and says whether it
 * is an active teammate. A task is only ever given to a member that holds this lock, and a
 * stopping member's row is updated before its tasks are released (releaseTasksOf), so a task
 * cannot end up owned by a member that stopped meanwhile.
 */
export async function lockActiveTeammate(
  tx: Queryable,
  teamId: number,
  name: string,
): Promise<{ id: number; name: string; status: string; role: string } | undefined> {
  const [row] = await tx.query<{ id: number; name: string; status: string; role: string }>(
    "SELECT id, name, status, role FROM members WHERE team_id = $1 AND name = $2 FOR SHARE",
    [teamId, name],
  );
  return row;
}
