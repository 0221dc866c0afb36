import type { TaskEdge } from "../domain/task-graph.js";
import type { Queryable } from "./database.js";

/**
 * The task list's dependencies (migration 008's task_dependencies): `task_id` waits on
 * `blocked_by`, both tasks of one team.
 *
 * The graph of a team changes only under its task-graph lock (lockTaskGraph), and so does
 * anything that closes a task (an approved sign-off, a deletion): the cycle check then sees
 * every edge, and of two blockers of one task closed at once the second sees the first.
 */

/**
 * The advisory lock's first key: "task" in ASCII. The second is the team's id. Advisory locks
 * with two int keys are a space of their own, apart from migrate.ts's one-bigint lock.
 */
const TASK_GRAPH_LOCK = 0x7461736b;

/**
 * Takes the team's task-graph lock until the transaction ends. Taken before any task row (see
 * docs/architecture.md, "The task list", for the lock order).
 */
export async function lockTaskGraph(tx: Queryable, teamId: number): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", [TASK_GRAPH_LOCK, teamId]);
}

/** Every dependency of a team (for the cycle check, under the task-graph lock). */
export async function teamEdges(tx: Queryable, teamId: number): Promise<TaskEdge[]> {
  const rows = await tx.query<{ task_id: string; blocked_by: string }>(
    "SELECT task_id, blocked_by FROM task_dependencies WHERE team_id = $1",
    [teamId],
  );
  return rows.map((r) => ({ taskId: r.task_id, blockedBy: r.blocked_by }));
}

/** Adds dependencies (one statement; an edge already there stays as it is). */
export async function addEdges(
  tx: Queryable,
  teamId: number,
  edges: readonly TaskEdge[],
): Promise<void> {
  if (edges.length === 0) return;
  await tx.query(
    `INSERT INTO task_dependencies (team_id, task_id, blocked_by)
     SELECT $1, e.task_id, e.blocked_by FROM unnest($2::text[], $3::text[]) AS e (task_id, blocked_by)
     ON CONFLICT DO NOTHING`,
    [teamId, edges.map((e) => e.taskId), edges.map((e) => e.blockedBy)],
  );
}

/** Removes dependencies (an edge that is not there is no error). */
export async function removeEdges(
  tx: Queryable,
  teamId: number,
  edges: readonly TaskEdge[],
): Promise<void> {
  if (edges.length === 0) return;
  await tx.query(
    `DELETE FROM task_dependencies d USING unnest($2::text[], $3::text[]) AS e (task_id, blocked_by)
     WHERE d.team_id = $1 AND d.task_id = e.task_id AND d.blocked_by = e.blocked_by`,
    [teamId, edges.map((e) => e.taskId), edges.map((e) => e.blockedBy)],
  );
}

/** The tasks waiting on one, in id order. */
export async function dependentsOf(
  tx: Queryable,
  teamId: number,
  taskId: string,
): Promise<string[]> {
  const rows = await tx.query<{ task_id: string }>(
    "SELECT task_id FROM task_dependencies WHERE team_id = $1 AND blocked_by = $2 ORDER BY task_id",
    [teamId, taskId],
  );
  return rows.map((r) => r.task_id);
}

/** Of some ids, those naming no task of the team and those naming a deleted one. */
export async function unusableTasks(
  tx: Queryable,
  teamId: number,
  taskIds: readonly string[],
): Promise<{ missing: string[]; deleted: string[] }> {
  const rows = await tx.query<{ task_id: string; status: string }>(
    "SELECT task_id, status FROM tasks WHERE team_id = $1 AND task_id = ANY($2::text[])",
    [teamId, [...taskIds]],
  );
  const status = new Map(rows.map((r) => [r.task_id, r.status]));
  const unique = [...new Set(taskIds)].sort();
  return {
    missing: unique.filter((id) => !status.has(id)),
    deleted: unique.filter((id) => status.get(id) === "deleted"),
  };
}
