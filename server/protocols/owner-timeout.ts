import { create, toBinary } from "@bufbuild/protobuf";
import { TaskStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import type { Queryable } from "../store/database.js";
import { lockAbsentMember } from "../store/presence.js";
import { finishRequest, lockPendingRequestsOfTask } from "../store/requests.js";
import { appendToInboxes } from "../store/send.js";
import { lockTasksOwnedBy, releaseTasksOf } from "../store/tasks.js";
import { deliverRequestUpdate } from "./request-updates.js";
import { type Aftermath, emptyAftermath } from "./task-ownership.js";

/**
 * TASK_OWNER_TIMEOUT_S (docs/presence.md): a member absent that long past going offline has
 * its claimed tasks given back, so a dead owner does not hold them forever. In one
 * transaction, in the task protocols' lock order (task-ownership.ts): the member's claimed
 * tasks, then their pending requests (a sign-off or handoff the absent owner opened or must
 * answer: canceled, the other party told), then the member row, which must still be absent
 * (a member seen meanwhile keeps its tasks); then every task goes back to unowned and pending
 * and the lead gets one server-written task_notification per task, as for a stopped member
 * (member-stop.ts). The member itself stays active: it may come back and claim again.
 */
export async function releaseTasksOfAbsentOwner(
  tx: Queryable,
  q: {
    teamId: number;
    member: { id: number; name: string };
    /** Seconds since last seen after which the member counts as absent. */
    absentS: number;
  },
): Promise<{ taskIds: string[]; aftermath: Aftermath }> {
  const aftermath = emptyAftermath();
  const tasks = await lockTasksOwnedBy(tx, q.member.id);
  // Stryker disable next-line ArrayDeclaration: equivalent; a junk element has no id, and finishRequest moves no row for it
  const requests = [];
  for (const task of tasks)
    requests.push(...(await lockPendingRequestsOfTask(tx, q.teamId, task.taskId)));
  if (!(await lockAbsentMember(tx, q.member.id, q.absentS))) return { taskIds: [], aftermath };
  for (const request of requests) {
    if (!(await finishRequest(tx, request.id, "canceled", null))) continue;
    aftermath.requestIds.push(request.id);
    // A pending request of a task its owner holds is one the owner opened (a handoff or a
    // sign-off; nobody claims a held task), so the other party is always the addressee:
    // `true`, "addressee" made "" (read as the addressee) and "requester" made "" are
    // equivalent mutants; `false` and `!==` are killed (the handoff's addressee is told).
    const other = request.fromId === q.member.id ? "addressee" : "requester";
    const delivery = await deliverRequestUpdate(
      tx,
      request,
      "canceled",
      other,
      `"${q.member.name}" has not been seen for too long: its task is unowned again and ` +
        `request ${request.id} is canceled`,
    );
    // The addressee of a pending request is active (a stop cancels a member's pending
    // requests), so `true` is equivalent; `false` is killed (its open Subscribe hears it live).
    if (delivery) aftermath.deliveries.push(delivery);
  }
  const taskIds = await releaseTasksOf(tx, q.member.id, q.member.id);
  // `false` is equivalent: with no task released the loop below writes nothing (the test
  // spares the lead's lookup); `true` and `!== 0` are killed.
  if (taskIds.length === 0) return { taskIds, aftermath };
  const [lead] = await tx.query<{ id: number; name: string }>(
    "SELECT id, name FROM members WHERE team_id = $1 AND role = 'lead'",
    [q.teamId],
  );
  // Every team has its lead (a lead is never removed): `false` and the emptied object are
  // equivalent mutants; the test only narrows the type.
  if (!lead) return { taskIds, aftermath };
  for (const taskId of taskIds) {
    const [delivery] = await appendToInboxes(
      tx,
      {
        teamId: q.teamId,
        senderId: null,
        fromName: "",
        to: lead.name,
        kind: "task_notification",
        body: toBinary(MessageSchema, absentOwnerNotice(taskId, q.member.name)),
      },
      [lead],
    );
    // One active recipient, one delivery: `true` is equivalent; `false` is killed (the
    // lead's open Subscribe hears the notice live).
    if (delivery) aftermath.deliveries.push(delivery);
  }
  return { taskIds, aftermath };
}

/** The lead's notice that an absent owner's task is unowned again. */
function absentOwnerNotice(taskId: string, member: string) {
  return create(MessageSchema, {
    kind: {
      case: "taskNotification",
      value: {
        taskId,
        status: TaskStatus.STOPPED,
        description: member,
        summary:
          `Agent "${member}" has been offline longer than TASK_OWNER_TIMEOUT_S: task ` +
          `${JSON.stringify(taskId)} is unowned again`,
      },
    },
  });
}
