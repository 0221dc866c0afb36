import type { StoredTaskProgress } from "../domain/words.js";
import type { Queryable } from "./database.js";

/** CreateTask's fields, as the rules table let them through. */
export interface NewTask {
  teamId: number;
  /** The caller's id for it; undefined: the team's next free number. */
  taskId: string | undefined;
  subject: string;
  description: string;
  activeForm: string;
  createdBy: number;
}

/** How many times a server id is drawn again when a concurrent CreateTask took it first. */
const SERVER_ID_TRIES = 50;

/**
 * Stores a new task (pending, unowned) and returns its id (its "created" event is the
 * caller's to record, once its dependencies are stored too); undefined
 * when the caller's id is taken. A server id is the team's next free number ("1", "2", ...,
 * as Claude Code numbers its tasks): one past the largest numeric id of the team. Two
 * creations drawing the same number meet on the primary key; the one that waited finds it
 * taken (ON CONFLICT) and draws again, seeing the other's row.
 */
export async function insertTask(tx: Queryable, t: NewTask): Promise<string | undefined> {
  for (let tries = 0; tries < SERVER_ID_TRIES; tries++) {
    const [inserted] = await tx.query<{ task_id: string }>(
      `INSERT INTO tasks (team_id, task_id, subject, description, active_form, created_by)
       SELECT $1, coalesce($2::text, (
                SELECT (coalesce(max(task_id::numeric), 0) + 1)::text FROM tasks
                WHERE team_id = $1 AND task_id ~ '^[1-9][0-9]{0,30}$')),
              $3, $4, $5, $6
       ON CONFLICT (team_id, task_id) DO NOTHING
       RETURNING task_id`,
      [t.teamId, t.taskId ?? null, t.subject, t.description, t.activeForm, t.createdBy],
    );
    if (inserted) return inserted.task_id;
    if (t.taskId !== undefined) return undefined;
  }
  throw new Error(`no free task number in team ${t.teamId} after ${SERVER_ID_TRIES} tries`);
}

/** UpdateTask's changes of a task's own fields; undefined: unchanged. */
export interface TaskFieldChanges {
  subject?: string | undefined;
  description?: string | undefined;
  activeForm?: string | undefined;
  /** pending or in_progress (an owner's move); deletion goes through moveTask. */
  status?: Extract<StoredTaskProgress, "pending" | "in_progress"> | undefined;
}

/**
 * Changes a locked task's own fields and marks it changed (ListTasks' order). Its event is
 * the caller's to record, once the dependencies changed too.
 */
export async function changeTaskFields(
  tx: Queryable,
  teamId: number,
  taskId: string,
  c: TaskFieldChanges,
): Promise<void> {
  await tx.query(
    `UPDATE tasks SET subject = coalesce($3, subject), description = coalesce($4, description),
       active_form = coalesce($5, active_form), status = coalesce($6, status),
       updated_at = clock_timestamp(), change = nextval('task_changes')
     WHERE team_id = $1 AND task_id = $2`,
    [
      teamId,
      taskId,
      c.subject ?? null,
      c.description ?? null,
      c.activeForm ?? null,
      c.status ?? null,
    ],
  );
}
