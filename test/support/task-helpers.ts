import type { Queryable } from "../../server/store/database.js";
import type { TeamClient } from "./harness.js";

// Message builders of the task protocols (claim, assign, handoff, result sign-off).

type MessageInit = Parameters<TeamClient["send"]>[0]["message"];

export const claimRequest = (taskId: string, note = ""): MessageInit => ({
  kind: { case: "taskClaimRequest", value: { taskId, note } },
});

export const claimResponse = (requestId: string, approve: boolean, reason = ""): MessageInit => ({
  kind: { case: "taskClaimResponse", value: { requestId, approve, reason } },
});

export const assign = (taskId: string, note = ""): MessageInit => ({
  kind: { case: "taskAssign", value: { taskId, note } },
});

export const handoffRequest = (taskId: string, note = "where it stands"): MessageInit => ({
  kind: { case: "taskHandoffRequest", value: { taskId, note } },
});

export const handoffResponse = (requestId: string, accept: boolean, reason = ""): MessageInit => ({
  kind: { case: "taskHandoffResponse", value: { requestId, accept, reason } },
});

export const signoffRequest = (taskId: string, result = "all tests pass"): MessageInit => ({
  kind: { case: "resultSignoffRequest", value: { taskId, result, summary: "" } },
});

export const signoffResponse = (
  requestId: string,
  approve: boolean,
  feedback = "",
): MessageInit => ({
  kind: { case: "resultSignoffResponse", value: { requestId, approve, feedback } },
});

/** A teammate claims a task and the lead approves: the teammate owns it. */
export async function claimAndApprove(
  lead: TeamClient,
  mate: TeamClient,
  mateName: string,
  taskId: string,
): Promise<string> {
  const asked = await mate.send({ to: "team-lead", message: claimRequest(taskId) });
  await lead.send({ to: mateName, message: claimResponse(asked.requestId, true) });
  return asked.requestId;
}

/** A task as `client` sees it (GetTask). */
export async function taskOf(client: TeamClient, taskId: string) {
  const got = await client.getTask({ taskId });
  if (!got.task) throw new Error(`GetTask ${taskId} returned no task`);
  return { ...got.task, history: got.history };
}

/** Creates tasks as `client` (the lead, usually): `[id, blockedBy...]` each, subject "do <id>". */
export async function createTasks(
  client: TeamClient,
  plan: readonly (readonly [string, ...string[]])[],
): Promise<void> {
  for (const [taskId, ...blockedBy] of plan) {
    await client.createTask({ taskId, subject: `do ${taskId}`, blockedBy });
  }
}

/** The ids of ListTasks' answer (every page), sorted. */
export async function taskIds(
  client: TeamClient,
  filter: Parameters<TeamClient["listTasks"]>[0] = {},
): Promise<string[]> {
  const ids: string[] = [];
  let pageToken = "";
  do {
    const page = await client.listTasks({ ...filter, pageToken, pageSize: 500 });
    ids.push(...page.tasks.map((t) => t.taskId));
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return ids.sort();
}

/**
 * Everything the task list stores of one team, as text (rows, dependencies, events, messages,
 * requests), so a refused call can be shown to have changed nothing.
 */
export async function taskListSnapshot(db: Queryable, team: string): Promise<string> {
  const rows = await db.query<{ what: string }>(
    `SELECT 'm ' || count(*) AS what FROM messages m JOIN teams t ON t.id = m.team_id WHERE t.name = $1
     UNION ALL
     SELECT * FROM (SELECT 'r ' || r.id || ' ' || r.status FROM requests r
                    JOIN teams t ON t.id = r.team_id WHERE t.name = $1 ORDER BY r.id) r
     UNION ALL
     SELECT * FROM (SELECT 't ' || k.task_id || ' ' || k.state || ' ' || k.status || ' '
                      || coalesce(k.owner_id, 0) || ' ' || k.subject || ' ' || k.description
                      || ' ' || k.active_form || ' ' || k.change
                    FROM tasks k JOIN teams t ON t.id = k.team_id WHERE t.name = $1
                    ORDER BY k.task_id) k
     UNION ALL
     SELECT * FROM (SELECT 'd ' || d.task_id || ' <- ' || d.blocked_by FROM task_dependencies d
                    JOIN teams t ON t.id = d.team_id WHERE t.name = $1
                    ORDER BY d.task_id, d.blocked_by) d
     UNION ALL
     SELECT 'e ' || count(*) FROM task_events e JOIN teams t ON t.id = e.team_id WHERE t.name = $1`,
    [team],
  );
  return rows.map((r) => r.what).join("\n");
}
