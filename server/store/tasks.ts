import type { StoredTaskProgress, TaskChange, TaskProgress, TaskState } from "../domain/words.js";
import type { Queryable } from "./database.js";
import { recordTaskEvents } from "./task-events.js";
import { BLOCKED_BY, OPEN_BLOCKER_EXISTS, OPEN_BLOCKERS, READ_STATUS } from "./task-sql.js";

export type { StoredTaskProgress, TaskChange, TaskProgress, TaskState };

/**
 * The tasks table (migrations 007 and 008): the team's task list, and who holds which task.
 * Every change of a task happens under its row lock, taken first in the transaction that
 * changes it (lockTask, or lockTasks for several, in id order), so racing claims, handoffs,
 * sign-offs and edits of one task are decided one after the other; the ownership updates are
 * compare-and-set on top of that, so a caller that skipped the lock still could not move a
 * task it did not see. Every change adds a task event (task-events.ts) for the feed.
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
  subject: string;
  description: string;
  activeForm: string;
  /** As read: in_review while a result_signoff request of the task is pending. */
  status: TaskProgress;
  /** As stored (what a move keeps when the owner changes). */
  storedStatus: StoredTaskProgress;
  /** "" when unknown (a task recorded before the task list existed). */
  createdByName: string;
  /** The tasks it waits on, in id order. */
  blockedBy: string[];
  /** The tasks waiting on it, in id order. */
  blocks: string[];
  /** Of blockedBy, those neither completed nor deleted. */
  openBlockers: string[];
  /** Unowned, pending, nothing open blocking it. */
  ready: boolean;
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
  subject: string;
  description: string;
  active_form: string;
  status: TaskProgress;
  stored_status: StoredTaskProgress;
  created_by_name: string | null;
  blocked_by: string[];
  blocks: string[];
  open_blockers: string[];
}

const taskColumns = `k.team_id, t.name AS team_name, k.task_id, k.state, k.owner_id,
  o.name AS owner_name, k.created_at, k.updated_at, k.change, k.subject, k.description,
  k.active_form, ${READ_STATUS} AS status, k.status AS stored_status, c.name AS created_by_name,
  ${BLOCKED_BY} AS blocked_by,
  ARRAY(SELECT d.task_id FROM task_dependencies d
        WHERE d.team_id = k.team_id AND d.blocked_by = k.task_id ORDER BY d.task_id) AS blocks,
  ${OPEN_BLOCKERS} AS open_blockers`;

const taskJoins = `tasks k JOIN teams t ON t.id = k.team_id LEFT JOIN members o ON o.id = k.owner_id
  LEFT JOIN members c ON c.id = k.created_by`;

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
  subject: r.subject,
  description: r.description,
  activeForm: r.active_form,
  status: r.status,
  storedStatus: r.stored_status,
  createdByName: r.created_by_name ?? "",
  blockedBy: r.blocked_by,
  blocks: r.blocks,
  openBlockers: r.open_blockers,
  ready: r.state === "unowned" && r.stored_status === "pending" && r.open_blockers.length === 0,
});

/**
 * Locks a task's row for the rest of the transaction. With `record`, a task id seen for the
 * first time is recorded first (unowned, pending, its id as subject, created by `record`'s
 * member, with a "created" event): the insert and the lock are one statement each, and
 * concurrent first claims of one id meet on the primary key, so exactly one inserts it and
 * the others wait for that row. Without `record`, an unknown id is undefined.
 */
export async function lockTask(
  tx: Queryable,
  teamId: number,
  taskId: string,
  options: { record?: { by: number } } = {},
): Promise<TaskRow | undefined> {
  if (options.record) {
    const inserted = await tx.query(
      `INSERT INTO tasks (team_id, task_id, subject, created_by) VALUES ($1, $2, left($2, 200), $3)
       ON CONFLICT (team_id, task_id) DO NOTHING RETURNING 1`,
      [teamId, taskId, options.record.by],
    );
    if (inserted.length > 0) {
      await recordTaskEvents(tx, teamId, [taskId], "created", options.record.by);
    }
  }
  const [row] = await tx.query<TaskSqlRow>(
    `SELECT ${taskColumns} FROM ${taskJoins}
     WHERE k.team_id = $1 AND k.task_id = $2 FOR UPDATE OF k`,
    [teamId, taskId],
  );
  return row ? toTask(row) : undefined;
}

/**
 * Locks the rows of several tasks of a team, in id order (the order every transaction that
 * locks more than one task row uses, so two of them cannot deadlock). Ids with no task are
 * left out.
 */
export async function lockTasks(
  tx: Queryable,
  teamId: number,
  taskIds: readonly string[],
): Promise<TaskRow[]> {
  // The lock is taken in the inner statement, in id order; the outer one reads the rows
  // (derived columns included) once they are held.
  await tx.query(
    `SELECT 1 FROM tasks WHERE team_id = $1 AND task_id = ANY($2::text[])
     ORDER BY task_id FOR UPDATE`,
    [teamId, [...taskIds]],
  );
  return findTasks(tx, teamId, taskIds);
}

/** Several tasks of a team, in id order (unlocked). */
export async function findTasks(
  db: Queryable,
  teamId: number,
  taskIds: readonly string[],
): Promise<TaskRow[]> {
  const rows = await db.query<TaskSqlRow>(
    `SELECT ${taskColumns} FROM ${taskJoins}
     WHERE k.team_id = $1 AND k.task_id = ANY($2::text[]) ORDER BY k.task_id`,
    [teamId, [...taskIds]],
  );
  return rows.map(toTask);
}

/** Where a task moves: its state, owner and stored status, and the event that says so. */
export interface TaskMove {
  state: TaskState;
  ownerId: number | null;
  status: StoredTaskProgress;
}

/**
 * Moves a task to a new state, owner and status, if it is still as the caller found it
 * (compare-and-set on state and owner). Returns false when it had moved meanwhile. Its event
 * is the caller's to record, once what the move settles (the task's other requests) is done.
 */
export async function moveTask(
  tx: Queryable,
  task: Pick<TaskRow, "teamId" | "taskId" | "state" | "ownerId">,
  to: TaskMove,
): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE tasks SET state = $5, owner_id = $6, status = $7, updated_at = clock_timestamp(),
       change = nextval('task_changes')
     WHERE team_id = $1 AND task_id = $2 AND state = $3 AND owner_id IS NOT DISTINCT FROM $4
     RETURNING 1`,
    [task.teamId, task.taskId, task.state, task.ownerId, to.state, to.ownerId, to.status],
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
 * Gives back every task a stopped member held: claimed becomes unowned and pending (an
 * "owner" event each, by `actorId`, whose call stopped it). A statement of its own, run after
 * the member row changed, so it also sees a task the member was given by a transaction that
 * committed while this one waited. Returns the task ids.
 */
export async function releaseTasksOf(
  tx: Queryable,
  memberId: number,
  actorId: number,
): Promise<string[]> {
  const rows = await tx.query<{ task_id: string; team_id: number }>(
    `UPDATE tasks SET state = 'unowned', owner_id = NULL, status = 'pending',
       updated_at = clock_timestamp(), change = nextval('task_changes')
     WHERE owner_id = $1 AND state = 'claimed'
     RETURNING task_id, team_id`,
    [memberId],
  );
  const ids = rows.map((r) => r.task_id).sort();
  const teamId = rows[0]?.team_id;
  if (teamId !== undefined) await recordTaskEvents(tx, teamId, ids, "owner", actorId);
  return ids;
}

/** One task of a team, unlocked; undefined when the id was never recorded. */
export async function findTask(
  db: Queryable,
  teamId: number,
  taskId: string,
): Promise<TaskRow | undefined> {
  const [row] = await findTasks(db, teamId, [taskId]);
  return row;
}

export interface TaskFilter {
  teamId: number;
  /** Only tasks this member holds or held when completed. */
  ownerId?: number | undefined;
  state?: TaskState | undefined;
  /** Only this status (as read); unset: any but deleted. */
  status?: TaskProgress | undefined;
  /** Only ready tasks. */
  ready?: boolean | undefined;
  /** Only open tasks (not completed, not deleted) with an open blocker. */
  blocked?: boolean | undefined;
  /** Keyset: tasks whose last change came before this one. */
  beforeChange?: bigint | undefined;
  limit: number;
}

/** A team's tasks, most recently changed first. */
export async function listTasks(db: Queryable, f: TaskFilter): Promise<TaskRow[]> {
  // Unset filters are NULL (or false) and switch themselves off: one statement text for every
  // filter. The status as read is computed in the inner query and filtered outside it.
  const rows = await db.query<TaskSqlRow>(
    `SELECT * FROM (
       SELECT ${taskColumns} FROM ${taskJoins}
       WHERE k.team_id = $1
         AND ($2::int IS NULL OR k.owner_id = $2)
         AND ($3::text IS NULL OR k.state = $3)
         AND ($4::bigint IS NULL OR k.change < $4)
         AND (NOT $5::bool OR (k.state = 'unowned' AND k.status = 'pending'
                               AND NOT ${OPEN_BLOCKER_EXISTS}))
         AND (NOT $6::bool OR (k.status NOT IN ('completed', 'deleted') AND ${OPEN_BLOCKER_EXISTS}))
     ) x
     WHERE ($7::text IS NULL AND x.status <> 'deleted') OR x.status = $7
     ORDER BY x.change DESC
     LIMIT $8`,
    [
      f.teamId,
      f.ownerId ?? null,
      f.state ?? null,
      f.beforeChange ?? null,
      f.ready ?? false,
      f.blocked ?? false,
      f.status ?? null,
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
