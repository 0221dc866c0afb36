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
