import { create, toBinary } from "@bufbuild/protobuf";
import { TaskStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import type { Queryable } from "../store/database.js";
import { appendToInboxes } from "../store/send.js";
import { dependentsOf } from "../store/task-dependencies.js";
import { recordTaskEvents } from "../store/task-events.js";
import { findTasks, type TaskRow } from "../store/tasks.js";
import type { Aftermath } from "./task-ownership.js";

/**
 * What closing a task (its sign-off approved, or its deletion) does to the tasks waiting on
 * it, in the closing transaction, after the task's row moved: each open one gets an
 * "unblocked" event (it waits on one task fewer), and each that is now ready (unowned,
 * pending, nothing open left to wait on) is announced to the lead with a server-written
 * task_notification, status READY. The caller holds the team's task-graph lock and the rows
 * of the closed task and of the tasks waiting on it, so a task whose last two blockers close
 * at once is announced exactly once: by the second transaction, which waited for the first.
 */
export async function unblockDependents(
  tx: Queryable,
  q: {
    teamId: number;
    closed: TaskRow;
    how: "completed" | "deleted";
    actorId: number;
    lead: { id: number; name: string };
    aftermath: Aftermath;
  },
): Promise<TaskRow[]> {
  const waiting = await findTasks(tx, q.teamId, await dependentsOf(tx, q.teamId, q.closed.taskId));
  const open = waiting.filter(
    (t) => t.storedStatus !== "completed" && t.storedStatus !== "deleted",
  );
  await recordTaskEvents(
    tx,
    q.teamId,
    open.map((t) => t.taskId),
    "unblocked",
    q.actorId,
  );
  const ready = open.filter((t) => t.ready);
  for (const task of ready) {
    const [delivery] = await appendToInboxes(
      tx,
      {
        teamId: q.teamId,
        senderId: null,
        fromName: "",
        to: q.lead.name,
        kind: "task_notification",
        body: toBinary(MessageSchema, readyNotice(task, q.closed, q.how)),
      },
      [q.lead],
    );
    // One active recipient, one delivery: the test only narrows the type, so `true` is an
    // equivalent mutant; `false` is killed (the lead's open Subscribe hears READY live).
    if (delivery) q.aftermath.deliveries.push(delivery);
  }
  return ready;
}

/** The lead's notice that a task can be claimed or assigned now. */
function readyNotice(task: TaskRow, closed: TaskRow, how: "completed" | "deleted") {
  const blocker = `${JSON.stringify(closed.taskId)} (${closed.subject})`;
  return create(MessageSchema, {
    kind: {
      case: "taskNotification",
      value: {
        taskId: task.taskId,
        status: TaskStatus.READY,
        description: task.subject,
        summary:
          `Task ${JSON.stringify(task.taskId)} (${task.subject}) is ready: ${blocker} was ${how}, ` +
          "and nothing else it waits on is open. Assign it, or a teammate may claim it",
      },
    },
  });
}
