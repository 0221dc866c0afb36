import type { TaskChange } from "../domain/words.js";
import type { Queryable } from "./database.js";
import { BLOCKED_BY, OPEN_BLOCKERS, READ_STATUS } from "./task-sql.js";

/**
 * Adds one feed event per task (migration 008's task_events): the change, who made it, and the
 * task as it stands now, in this transaction, read from its row. Called after the change, by a
 * transaction that holds the task's row lock (or inserted the row), so a task's events keep
 * the order of its changes (docs/watch.md). One statement for any number of tasks.
 */
export async function recordTaskEvents(
  tx: Queryable,
  teamId: number,
  taskIds: readonly string[],
  change: TaskChange,
  actorId: number,
): Promise<void> {
  if (taskIds.length === 0) return;
  await tx.query(
    `INSERT INTO task_events (team_id, task_id, change, actor_id, state, status, owner_id,
                              created_by, subject, description, active_form, blocked_by,
                              open_blockers, created_at)
     SELECT k.team_id, k.task_id, $3, $4, k.state, ${READ_STATUS}, k.owner_id, k.created_by,
            k.subject, k.description, k.active_form, ${BLOCKED_BY}, ${OPEN_BLOCKERS},
            k.created_at
     FROM tasks k WHERE k.team_id = $1 AND k.task_id = ANY($2::text[])
     ORDER BY k.task_id`,
    [teamId, [...taskIds], change, actorId],
  );
}
