import { create, toBinary } from "@bufbuild/protobuf";
import { TaskStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import type { Queryable } from "../store/database.js";
import { releaseLeasesOf } from "../store/leases.js";
import { appendToInboxes } from "../store/send.js";
import { lockTasksOwnedBy, releaseTasksOf } from "../store/tasks.js";
import { cancelRequestsOfStoppingMember } from "./cancel.js";
import type { Aftermath } from "./task-ownership.js";

/**
 * What a member's stop does to the protocols, inside the stopping transaction (an approved
 * shutdown, or RemoveMember): its tasks are locked first (task rows before request rows),
 * its pending requests canceled (cancel.ts), then `stop` changes the member row, then every
 * task it held goes back to unowned (and pending) and the lead gets one server-written task_notification
 * per task (status STOPPED, from "", naming the task), so the lead can give it to someone
 * else; its leases are released. The release is a statement of its own after the member row changed, so it also sees
 * a task given to the member by a transaction that committed meanwhile.
 */
export async function stopMemberAndRelease<T>(
  tx: Queryable,
  q: {
    teamId: number;
    member: { id: number; name: string };
    lead: { id: number; name: string };
    /** The member whose call stops it (itself, or the lead removing it): the tasks' events name it. */
    actorId: number;
    /** Completes "<member> ...": why it stopped. */
    why: string;
    stop: () => Promise<T>;
  },
): Promise<{ stopped: T; aftermath: Aftermath }> {
  await lockTasksOwnedBy(tx, q.member.id);
  const aftermath: Aftermath = await cancelRequestsOfStoppingMember(tx, q.member, q.why);
  const stopped = await q.stop();
  // Its leases go with it, in the same transaction: nobody waits on a stopped member's lease.
  await releaseLeasesOf(tx, q.member.id);
  for (const taskId of await releaseTasksOf(tx, q.member.id, q.actorId)) {
    const [delivery] = await appendToInboxes(
      tx,
      {
        teamId: q.teamId,
        senderId: null,
        fromName: "",
        to: q.lead.name,
        kind: "task_notification",
        body: toBinary(MessageSchema, releasedNotice(taskId, q.member.name, q.why)),
      },
      [q.lead],
    );
    // One active recipient, one delivery: the test only narrows the type, so `true` is an
    // equivalent mutant; `false` is killed (the lead's open Subscribe hears the notice live).
    if (delivery) aftermath.deliveries.push(delivery);
  }
  return { stopped, aftermath };
}

/** The lead's notice that a stopped member's task is unowned again. */
function releasedNotice(taskId: string, member: string, why: string) {
  return create(MessageSchema, {
    kind: {
      case: "taskNotification",
      value: {
        taskId,
        status: TaskStatus.STOPPED,
        description: member,
        summary: `Agent "${member}" ${why}: task ${JSON.stringify(taskId)} is unowned again`,
      },
    },
  });
}
