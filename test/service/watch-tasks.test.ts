import { expect, it } from "vitest";
import {
  MemberChange,
  MemberRole,
  RequestKind,
  RequestStatus,
  TaskChange,
  TaskProgress,
  TaskState,
} from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import {
  assign,
  claimRequest,
  claimResponse,
  handoffRequest,
  handoffResponse,
  signoffRequest,
  signoffResponse,
} from "../support/task-helpers.js";
import { expectFeedOrder, watch } from "../support/team-watch.js";

/** An event as a line: what a reader of the feed sees of the task protocols. */
function line(e: TeamEvent): string {
  switch (e.change.case) {
    case "envelope": {
      const { recipient, envelope } = e.change.value;
      return `${envelope?.from || "(server)"} -> ${recipient}: ${envelope?.message?.kind.case}`;
    }
    case "request": {
      const r = e.change.value.request;
      return `request ${RequestKind[r?.kind ?? 0]} ${r?.from} -> ${r?.to} ${RequestStatus[r?.status ?? 0]}`;
    }
    case "member":
      return `member ${e.change.value.member?.name} ${MemberChange[e.change.value.change]}`;
    case "task": {
      const { change, task, by } = e.change.value;
      return `task ${task?.taskId} ${TaskChange[change]} by ${by}: ${TaskState[task?.state ?? 0]} ${task?.owner || "-"} ${TaskProgress[task?.status ?? 0]}`;
    }
    default:
      return "?";
  }
}

/**
 * WatchTeam shows the task protocols as it shows the others: every envelope, every request
 * event (created, answered, canceled by a change of owner, assigned), and a stopped owner's
 * release (its member event and the lead's server-written task_notification), in an order
 * that agrees with each inbox and request.
 */
describeEachDatabase("WatchTeam: the task protocols in the team feed", (env) => {
  it("claims, assignments, handoffs, sign-offs, cancellations and a stopped owner's release, in order", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const eye = env().client(
      (await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token,
    );
    const w = watch(eye);
    const c = await alice.send({ to: "team-lead", message: claimRequest("t1") });
    await t.lead.send({ to: "alice", message: claimResponse(c.requestId, true) });
    await t.lead.send({ to: "bob", message: assign("t2") });
    await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t1") });
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    await t.lead.removeMember({ name: "bob" });
    const notice = "(server) -> team-lead: taskNotification";
    await w.until(
      "the lead's notices of bob's two tasks",
      (x) => x.events().filter((e) => line(e) === notice).length === 2,
    );
    const events = w.events();
    expectFeedOrder(events);
    expect(events.map(line).filter((l) => !l.startsWith("member ") || l.includes("bob R"))).toEqual(
      [
        // The first claim of t1 records it, its id as subject (the task's "created" event).
        "task t1 CREATED by alice: UNOWNED - PENDING",
        "alice -> team-lead: taskClaimRequest",
        "request TASK_CLAIM alice -> team-lead PENDING",
        "request TASK_CLAIM alice -> team-lead APPROVED",
        "task t1 OWNER by team-lead: CLAIMED alice IN_PROGRESS",
        "team-lead -> alice: taskClaimResponse",
        "task t2 CREATED by team-lead: UNOWNED - PENDING",
        "task t2 OWNER by team-lead: CLAIMED bob PENDING",
        "team-lead -> bob: taskAssign",
        "request TASK_ASSIGN team-lead -> bob APPROVED",
        "alice -> team-lead: resultSignoffRequest",
        "request RESULT_SIGNOFF alice -> team-lead PENDING",
        "alice -> bob: taskHandoffRequest",
        "request TASK_HANDOFF alice -> bob PENDING",
        // bob accepts: the handoff is approved, the sign-off canceled (in_review ends),
        // alice and the lead told, the task moved.
        "request TASK_HANDOFF alice -> bob APPROVED",
        "request RESULT_SIGNOFF alice -> team-lead CANCELED",
        "(server) -> alice: requestUpdate",
        "(server) -> team-lead: requestUpdate",
        "task t1 OWNER by bob: CLAIMED bob IN_PROGRESS",
        "bob -> alice: taskHandoffResponse",
        // bob is removed: its member event, its two tasks released (by the lead's call), then
        // one notice per task it held.
        "member bob REMOVED",
        "task t1 OWNER by team-lead: UNOWNED - PENDING",
        "task t2 OWNER by team-lead: UNOWNED - PENDING",
        notice,
        notice,
      ],
    );
    w.stop();
  });

  it("the task list: every change of a task is an event with the task as it then stood, in order; a replay from the start shows the same", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const w = watch(t.lead);
    await t.lead.createTask({ taskId: "a", subject: "A" });
    await alice.createTask({ taskId: "b", subject: "B", blockedBy: ["a"] });
    await t.lead.createTask({ taskId: "c", subject: "C" });
    await t.lead.updateTask({ taskId: "c", addBlocks: ["b"], description: "first" });
    await t.lead.send({ to: "alice", message: assign("a") });
    await alice.updateTask({ taskId: "a", status: TaskProgress.IN_PROGRESS });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("a") });
    await t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
    await t.lead.deleteTask({ taskId: "c" });
    const taskLines = (events: TeamEvent[]) =>
      events.filter((e) => e.change.case === "task").map(line);
    const expected = [
      "task a CREATED by team-lead: UNOWNED - PENDING",
      "task b CREATED by alice: UNOWNED - PENDING",
      "task c CREATED by team-lead: UNOWNED - PENDING",
      // c gains b as a task waiting on it: both rows change.
      "task b UPDATED by team-lead: UNOWNED - PENDING",
      "task c UPDATED by team-lead: UNOWNED - PENDING",
      "task a OWNER by team-lead: CLAIMED alice PENDING",
      "task a UPDATED by alice: CLAIMED alice IN_PROGRESS",
      "task a COMPLETED by team-lead: DONE alice COMPLETED",
      // b still waits on c.
      "task b UNBLOCKED by team-lead: UNOWNED - PENDING",
      "task c DELETED by team-lead: UNOWNED - DELETED",
      // Now nothing open blocks b: its event, and the lead's notice.
      "task b UNBLOCKED by team-lead: UNOWNED - PENDING",
    ];
    const ready = "(server) -> team-lead: taskNotification";
    await w.until(
      "b unblocked twice, and the lead's notice",
      (x) =>
        taskLines(x.events()).length === expected.length && x.events().map(line).includes(ready),
    );
    expectFeedOrder(w.events());
    expect(taskLines(w.events())).toEqual(expected);
    const snapshots = w
      .events()
      .flatMap((e) => (e.change.case === "task" ? [e.change.value.task] : []));
    expect(snapshots[3]).toMatchObject({ taskId: "b", blockedBy: ["a", "c"], ready: false });
    expect(snapshots[4]).toMatchObject({ taskId: "c", description: "first", blocks: [] });
    expect(snapshots[8]).toMatchObject({ taskId: "b", openBlockers: ["c"], ready: false });
    expect(snapshots[10]).toMatchObject({ taskId: "b", openBlockers: [], ready: true });
    expect(w.events().map(line).slice(-2)).toEqual([expected.at(-1), ready]);
    w.stop();
    const replay = watch(t.lead);
    await replay.until(
      "the whole history",
      (x) => taskLines(x.events()).length === expected.length,
    );
    expect(taskLines(replay.events())).toEqual(expected);
    replay.stop();
  });
});
