// SQL fragments about a task of alias `k` (a tasks row), shared by the statements that read
// tasks (tasks.ts) and those that snapshot them for the feed (task-events.ts).

/** A task of alias `k` has an open blocker: one it waits on that is neither completed nor deleted. */
export const OPEN_BLOCKER_EXISTS = `EXISTS (
  SELECT 1 FROM task_dependencies d JOIN tasks b ON b.team_id = d.team_id AND b.task_id = d.blocked_by
  WHERE d.team_id = k.team_id AND d.task_id = k.task_id AND b.status NOT IN ('completed', 'deleted'))`;

/**
 * A task of alias `k` as read: in_review while a result_signoff of it is pending (before its
 * deadline, as requests read: an overdue one is expired already).
 */
export const READ_STATUS = `CASE WHEN k.status IN ('pending', 'in_progress') AND EXISTS (
    SELECT 1 FROM requests r
    WHERE r.team_id = k.team_id AND r.task_id = k.task_id AND r.kind = 'result_signoff'
      AND r.status = 'pending' AND r.expires_at > clock_timestamp())
  THEN 'in_review' ELSE k.status END`;

/** The ids a task of alias `k` waits on, and of those the open ones, in id order. */
export const BLOCKED_BY = `ARRAY(SELECT d.blocked_by FROM task_dependencies d
  WHERE d.team_id = k.team_id AND d.task_id = k.task_id ORDER BY d.blocked_by)`;
export const OPEN_BLOCKERS = `ARRAY(SELECT d.blocked_by FROM task_dependencies d
  JOIN tasks b ON b.team_id = d.team_id AND b.task_id = d.blocked_by
  WHERE d.team_id = k.team_id AND d.task_id = k.task_id
    AND b.status NOT IN ('completed', 'deleted') ORDER BY d.blocked_by)`;
