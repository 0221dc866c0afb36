import { ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import {
  RequestStatus,
  TaskChange,
  TaskProgress,
  TaskState,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import { describeEachDatabase, raceTitle, type TeamClient } from "../support/harness.js";
import { inbox, refused, requestRecord } from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";
import { openSubscription } from "../support/subscription-reader.js";
import {
  assign,
  claimAndApprove,
  claimRequest,
  claimResponse,
  createTasks,
  handoffRequest,
  signoffRequest,
  signoffResponse,
  taskIds,
  taskListSnapshot,
  taskOf,
} from "../support/task-helpers.js";
import { watch } from "../support/team-watch.js";

/** The READY notices the server wrote to a member's inbox: the ids of the tasks, in order. */
async function readyNotices(client: TeamClient): Promise<string[]> {
  return (await inbox(client)).flatMap((e) =>
    e.from === "" &&
    e.message?.kind.case === "taskNotification" &&
    e.message.kind.value.status === TaskStatus.READY
      ? [e.message.kind.value.taskId]
      : [],
  );
}

/** Assigns a task, asks for its sign-off and approves it: the task is completed. */
async function complete(lead: TeamClient, mate: TeamClient, mateName: string, taskId: string) {
  await lead.send({ to: mateName, message: assign(taskId) });
  const s = await mate.send({ to: "team-lead", message: signoffRequest(taskId) });
  await lead.send({ to: mateName, message: signoffResponse(s.requestId, true) });
}

describeEachDatabase("the task list: flows", (env, kind) => {
  it("CreateTask stores the caller's id or the team's next number; every member sees the whole list", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const first = await t.lead.createTask({
      subject: "  Write the parser  ",
      description: "Replace src/parser.ts.\nKeep the old one behind a flag.",
      activeForm: "Writing the parser",
    });
    expect(first.task).toMatchObject({
      taskId: "1",
      team: t.name,
      subject: "Write the parser",
      description: "Replace src/parser.ts.\nKeep the old one behind a flag.",
      activeForm: "Writing the parser",
      status: TaskProgress.PENDING,
      state: TaskState.UNOWNED,
      owner: "",
      ready: true,
      blockedBy: [],
      openBlockers: [],
      createdBy: "team-lead",
    });
    const second = await alice.createTask({ subject: "Test it", blockedBy: ["1"] });
    expect(second.task).toMatchObject({
      taskId: "2",
      createdBy: "alice",
      blockedBy: ["1"],
      openBlockers: ["1"],
      ready: false,
    });
    await alice.createTask({ taskId: "docs", subject: "Document it", blockedBy: ["1", "2"] });
    // A caller's numeric id moves the next number past it.
    await t.lead.createTask({ taskId: "7", subject: "Seven" });
    expect((await t.lead.createTask({ subject: "Eight" })).task?.taskId).toBe("8");
    expect((await taskOf(t.member("bob").client, "1")).blocks).toEqual(["2", "docs"]);
    for (const who of [t.lead, alice, t.member("bob").client]) {
      expect(await taskIds(who)).toEqual(["1", "2", "7", "8", "docs"]);
    }
    expect(await taskIds(alice, { ready: true })).toEqual(["1", "7", "8"]);
    expect(await taskIds(alice, { blocked: true })).toEqual(["2", "docs"]);
    expect(await taskIds(alice, { status: TaskProgress.PENDING })).toEqual([
      "1",
      "2",
      "7",
      "8",
      "docs",
    ]);
    // A claim of an id no one created records it, its id as subject, as before the list.
    await alice.send({ to: "team-lead", message: claimRequest("legacy-9") });
    expect(await taskOf(t.lead, "legacy-9")).toMatchObject({
      subject: "legacy-9",
      createdBy: "alice",
      status: TaskProgress.PENDING,
      state: TaskState.UNOWNED,
    });
    // So does an assignment of one, the lead its creator.
    await t.lead.send({ to: "bob", message: assign("legacy-10") });
    expect(await taskOf(alice, "legacy-10")).toMatchObject({
      subject: "legacy-10",
      createdBy: "team-lead",
      owner: "bob",
    });
  });

  it("a plan: a blocked claim is refused naming its blockers; each sign-off makes exactly its now-unblocked dependents ready, and the lead is told once each", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    // a; b and c wait on a; d waits on b and c; e waits on d.
    await createTasks(t.lead, [["a"], ["b", "a"], ["c", "a"], ["d", "b", "c"], ["e", "d"]]);
    expect(await taskIds(bob, { ready: true })).toEqual(["a"]);
    const r = await refused(() => bob.send({ to: "team-lead", message: claimRequest("d") }));
    expect(r.detail?.rule).toBe("task-blocked");
    expect(r.message).toContain('task "d" is blocked by "b", "c"');
    const assigned = await refused(() => t.lead.send({ to: "bob", message: assign("b") }));
    expect([assigned.detail?.rule, assigned.message]).toEqual([
      "task-blocked",
      expect.stringContaining('blocked by "a"'),
    ]);

    await complete(t.lead, alice, "alice", "a");
    expect(await taskOf(bob, "a")).toMatchObject({
      status: TaskProgress.COMPLETED,
      state: TaskState.DONE,
      owner: "alice",
    });
    expect(await taskIds(bob, { ready: true })).toEqual(["b", "c"]);
    expect(await taskIds(bob, { blocked: true })).toEqual(["d", "e"]);
    expect(await readyNotices(t.lead)).toEqual(["b", "c"]);
    const [notice] = (await inbox(t.lead)).filter(
      (e) => e.message?.kind.case === "taskNotification",
    );
    expect(notice?.message?.kind.value).toMatchObject({
      taskId: "b",
      description: "do b",
      summary: expect.stringContaining('"a" (do a) was completed'),
    });
    // Stored as task_notifications: a search of the lead's history by that kind finds them.
    const found = await t.lead.searchMessages({ query: "ready", kind: "task_notification" });
    expect(
      found.hits
        .map((h) => (h.envelope?.message?.kind.value as { taskId?: string } | undefined)?.taskId)
        .sort(),
    ).toEqual(["b", "c"]);

    await complete(t.lead, bob, "bob", "b");
    expect((await taskOf(bob, "d")).openBlockers).toEqual(["c"]);
    expect(await readyNotices(t.lead)).toEqual(["b", "c"]);
    await complete(t.lead, alice, "alice", "c");
    expect(await readyNotices(t.lead)).toEqual(["b", "c", "d"]);
    expect(await taskIds(bob, { ready: true })).toEqual(["d"]);
    expect(await taskIds(bob, { status: TaskProgress.COMPLETED })).toEqual(["a", "b", "c"]);
    await claimAndApprove(t.lead, bob, "bob", "d");
    expect(await taskOf(bob, "d")).toMatchObject({
      status: TaskProgress.IN_PROGRESS,
      owner: "bob",
      ready: false,
    });
  });

  it("in_review while the sign-off waits; a rejection gives the task back in_progress, an approval completes it", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    await t.lead.createTask({ taskId: "x", subject: "x" });
    await claimAndApprove(t.lead, alice, "alice", "x");
    const first = await alice.send({ to: "team-lead", message: signoffRequest("x") });
    expect((await taskOf(alice, "x")).status).toBe(TaskProgress.IN_REVIEW);
    expect(await taskIds(alice, { status: TaskProgress.IN_REVIEW })).toEqual(["x"]);
    await t.lead.send({
      to: "alice",
      message: signoffResponse(first.requestId, false, "add a test"),
    });
    expect((await taskOf(alice, "x")).status).toBe(TaskProgress.IN_PROGRESS);
    const second = await alice.send({ to: "team-lead", message: signoffRequest("x") });
    await alice.cancelRequest({ requestId: second.requestId });
    expect((await taskOf(alice, "x")).status).toBe(TaskProgress.IN_PROGRESS);
    const third = await alice.send({ to: "team-lead", message: signoffRequest("x") });
    await t.lead.send({ to: "alice", message: signoffResponse(third.requestId, true) });
    expect((await taskOf(alice, "x")).status).toBe(TaskProgress.COMPLETED);
  });

  it("the owner starts, pauses and rewords its task; an assignment waits pending until it does", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    await t.lead.createTask({ taskId: "x", subject: "Parse" });
    await t.lead.send({ to: "alice", message: assign("x") });
    expect((await taskOf(alice, "x")).status).toBe(TaskProgress.PENDING);
    const started = await alice.updateTask({
      taskId: "x",
      status: TaskProgress.IN_PROGRESS,
      activeForm: "Parsing",
    });
    expect(started.task).toMatchObject({ status: TaskProgress.IN_PROGRESS, activeForm: "Parsing" });
    const reworded = await alice.updateTask({ taskId: "x", subject: "Parse faster" });
    expect(reworded.task).toMatchObject({
      subject: "Parse faster",
      status: TaskProgress.IN_PROGRESS,
    });
    await alice.updateTask({ taskId: "x", status: TaskProgress.PENDING });
    expect((await taskOf(t.lead, "x")).status).toBe(TaskProgress.PENDING);
    // A handoff keeps what the work is at; a handoff to the lead makes it pending and unowned.
    await alice.updateTask({ taskId: "x", status: TaskProgress.IN_PROGRESS });
    const h = await alice.send({ to: "team-lead", message: handoffRequest("x") });
    await t.lead.send({
      to: "alice",
      message: {
        kind: { case: "taskHandoffResponse", value: { requestId: h.requestId, accept: true } },
      },
    });
    expect(await taskOf(t.lead, "x")).toMatchObject({
      state: TaskState.UNOWNED,
      status: TaskProgress.PENDING,
      ready: true,
    });
  });

  it("a sign-off unblocks in the feed each open task waiting on it, not one already completed or deleted; the lead's open stream hears live of the one now ready", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    // b and d wait on a; c is done while it still waits on a, d deleted while it does. No
    // call makes a completed task wait (task-blocked refuses its sign-off, and a done task
    // takes no dependency), but data stored before that rule, or imported, may hold one.
    await createTasks(t.lead, [["a"], ["b", "a"], ["c"], ["d", "a"]]);
    await t.lead.send({ to: "alice", message: assign("c") });
    const sc = await alice.send({ to: "team-lead", message: signoffRequest("c") });
    await t.lead.send({ to: "alice", message: signoffResponse(sc.requestId, true) });
    await env().db.query(
      `INSERT INTO task_dependencies (team_id, task_id, blocked_by)
       SELECT id, 'c', 'a' FROM teams WHERE name = $1`,
      [t.name],
    );
    expect(await taskOf(alice, "c")).toMatchObject({
      status: TaskProgress.COMPLETED,
      openBlockers: ["a"],
    });
    await t.lead.deleteTask({ taskId: "d" });
    await t.lead.send({ to: "alice", message: assign("a") });
    const sa = await alice.send({ to: "team-lead", message: signoffRequest("a") });

    // The lead's stream has read its inbox (the sign-off request last) and waits: the READY
    // notice the approval writes can only reach it live, before any heartbeat.
    const before = env().app.hub.waiting;
    const stream = openSubscription(t.lead);
    await subscribedBeyond(env().app, before);
    await t.lead.send({ to: "alice", message: signoffResponse(sa.requestId, true) });
    const read = await stream.until(
      (e) =>
        e.event.case === "envelope" &&
        e.event.value.message?.kind.case === "taskNotification" &&
        e.event.value.message.kind.value.taskId === "b",
    );
    stream.close();
    expect(read.map((e) => e.event.case)).not.toContain("heartbeat");
    expect(read.at(-1)?.event.value).toMatchObject({
      from: "",
      message: { kind: { value: { taskId: "b", status: TaskStatus.READY } } },
    });

    // The feed from the start, up to that notice: only b, still open, was unblocked.
    const w = watch(t.lead);
    const isReadyNotice = (e: TeamEvent) =>
      e.change.case === "envelope" &&
      e.change.value.envelope?.message?.kind.case === "taskNotification" &&
      e.change.value.envelope.message.kind.value.taskId === "b";
    await w.until("b's READY notice in the feed", (x) => x.events().some(isReadyNotice));
    w.stop();
    const unblocked = w
      .events()
      .flatMap((e) =>
        e.change.case === "task" && e.change.value.change === TaskChange.UNBLOCKED
          ? [`${e.change.value.task?.taskId} by ${e.change.value.by}`]
          : [],
      );
    expect(unblocked).toEqual(["b by team-lead"]);
  });

  it("the sign-off of a task whose waiting tasks' ids sort before its own completes that task, not one of them", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    // The approval locks "z" with the tasks waiting on it, in id order: "a" comes first.
    await createTasks(t.lead, [["z"], ["a", "z"]]);
    await complete(t.lead, alice, "alice", "z");
    expect(await taskOf(alice, "z")).toMatchObject({ state: TaskState.DONE, owner: "alice" });
    expect(await taskOf(alice, "a")).toMatchObject({ state: TaskState.UNOWNED, ready: true });
    expect(await readyNotices(t.lead)).toEqual(["a"]);
  });

  it("DeleteTask: pending requests canceled, the tasks that waited only on it ready and announced, every later write refused", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await createTasks(t.lead, [["a"], ["b"], ["c", "a"], ["d", "a", "b"]]);
    await t.lead.send({ to: "alice", message: assign("a") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("a") });
    const deleted = await t.lead.deleteTask({ taskId: "a" });
    expect(deleted.task).toMatchObject({
      status: TaskProgress.DELETED,
      state: TaskState.UNOWNED,
      owner: "",
    });
    expect((await requestRecord(t.lead, s.requestId)).status).toBe(RequestStatus.CANCELED);
    // alice, who asked, is told why: the deletion, by the lead.
    const told = (await inbox(alice)).filter(
      (e) => e.message?.kind.case === "requestUpdate" && e.requestId === s.requestId,
    );
    expect(told.map((e) => e.message?.kind.value)).toEqual([
      expect.objectContaining({
        status: RequestStatus.CANCELED,
        detail: expect.stringContaining('task "a" was deleted by the lead'),
      }),
    ]);
    // The lead's READY notice says how the blocker closed.
    const notices = (await inbox(t.lead)).flatMap((e) =>
      e.message?.kind.case === "taskNotification" ? [e.message.kind.value.summary] : [],
    );
    expect(notices.at(-1)).toBe(
      'Task "c" (do c) is ready: "a" (do a) was deleted, and nothing else it waits on is open. Assign it, or a teammate may claim it',
    );
    expect(await readyNotices(t.lead)).toEqual(["c"]);
    expect(await taskIds(bob, { ready: true })).toEqual(["b", "c"]);
    expect((await taskOf(bob, "d")).openBlockers).toEqual(["b"]);
    // Listed only when asked for.
    expect(await taskIds(bob)).toEqual(["b", "c", "d"]);
    expect(await taskIds(bob, { status: TaskProgress.DELETED })).toEqual(["a"]);
    for (const call of [
      () => bob.send({ to: "team-lead", message: claimRequest("a") }),
      () => t.lead.send({ to: "bob", message: assign("a") }),
      () => t.lead.updateTask({ taskId: "a", subject: "again" }),
      () => t.lead.deleteTask({ taskId: "a" }),
      () => t.lead.updateTask({ taskId: "b", addBlockedBy: ["a"] }),
    ]) {
      const r = await refused(call);
      expect(r.detail?.rule).toMatch(/^task-(deleted|exists)$/);
    }
    // UpdateTask with status deleted is the same deletion.
    await t.lead.updateTask({ taskId: "b", status: TaskProgress.DELETED });
    expect(await readyNotices(t.lead)).toEqual(["c", "d"]);
  });

  it(
    raceTitle(
      kind,
      "20 teammates race for the only ready task of a plan: one claim pending, one owner",
    ),
    async () => {
      const names = Array.from({ length: 20 }, (_, i) => `m${i}`);
      const t = await env().team(...names);
      await createTasks(t.lead, [["only"], ["next", "only"], ["last", "next"]]);
      const outcomes = await Promise.all(
        names.map((n) =>
          t
            .member(n)
            .client.send({ to: "team-lead", message: claimRequest("only") })
            .then((r) => ({ n, id: r.requestId, rule: "ok" }))
            .catch((e) => ({ n, id: "", rule: ConnectError.from(e).rawMessage.split(":")[0] })),
        ),
      );
      const won = outcomes.filter((o) => o.rule === "ok");
      expect(won).toHaveLength(1);
      expect(outcomes.filter((o) => o.rule === "one-owner")).toHaveLength(19);
      const [winner] = won;
      if (!winner) throw new Error("no winner");
      await t.lead.send({ to: winner.n, message: claimResponse(winner.id, true) });
      expect(await taskOf(t.lead, "only")).toMatchObject({
        owner: winner.n,
        status: TaskProgress.IN_PROGRESS,
      });
      const owned = await env().db.query<{ n: bigint }>(
        `SELECT count(*) AS n FROM tasks k JOIN teams t ON t.id = k.team_id
         WHERE t.name = $1 AND k.owner_id IS NOT NULL`,
        [t.name],
      );
      expect(owned[0]?.n).toBe(1n);
    },
  );

  it(
    raceTitle(
      kind,
      "the last two blockers of a task signed off at once: it is announced exactly once, 8 rounds",
    ),
    async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      for (let round = 0; round < 8; round++) {
        const [x, y, z] = [`x${round}`, `y${round}`, `z${round}`];
        await createTasks(t.lead, [[x], [y], [z, x, y]]);
        await t.lead.send({ to: "alice", message: assign(x) });
        await t.lead.send({ to: "bob", message: assign(y) });
        const sx = await alice.send({ to: "team-lead", message: signoffRequest(x) });
        const sy = await bob.send({ to: "team-lead", message: signoffRequest(y) });
        await Promise.all([
          t.lead.send({ to: "alice", message: signoffResponse(sx.requestId, true) }),
          t.lead.send({ to: "bob", message: signoffResponse(sy.requestId, true) }),
        ]);
        expect((await readyNotices(t.lead)).filter((id) => id === z)).toEqual([z]);
        expect((await taskOf(bob, z)).ready).toBe(true);
      }
    },
  );

  it("cycles of any length are refused naming the cycle, and nothing of the call is stored", async () => {
    const t = await env().team("alice");
    // A chain c0 <- c1 <- ... <- c9 (each waits on the one before).
    await createTasks(t.lead, [
      ["c0"],
      ...Array.from({ length: 9 }, (_, i) => [`c${i + 1}`, `c${i}`] as [string, string]),
      ["free"],
    ]);
    const cases: [string, Parameters<TeamClient["updateTask"]>[0], string][] = [
      ["itself", { taskId: "c0", addBlockedBy: ["c0"] }, 'task "c0" cannot wait on itself'],
      ["two", { taskId: "c0", addBlockedBy: ["c1"] }, '"c0" -> "c1" -> "c0"'],
      ["three, by add_blocks", { taskId: "c2", addBlocks: ["c0"] }, '"c2" -> "c1" -> "c0" -> "c2"'],
      [
        "ten",
        { taskId: "c0", addBlockedBy: ["c9"], subject: "changed" },
        '"c0" -> "c9" -> "c8" -> "c7" -> "c6" -> "c5" -> "c4" -> "c3" -> "c2" -> "c1" -> "c0"',
      ],
      [
        "one good edge and one closing a cycle",
        { taskId: "c5", addBlockedBy: ["free", "c7"] },
        '"c5" -> "c7" -> "c6" -> "c5"',
      ],
    ];
    for (const [what, update, named] of cases) {
      const before = await taskListSnapshot(env().db, t.name);
      const r = await refused(() => t.lead.updateTask(update));
      expect([r.detail?.rule, what]).toEqual(["no-cycle", what]);
      expect(r.message, what).toContain(named);
      expect(await taskListSnapshot(env().db, t.name), what).toBe(before);
    }
    const self = await refused(() =>
      t.lead.createTask({ taskId: "loop", subject: "loop", blockedBy: ["loop"] }),
    );
    expect(self.detail?.rule).toBe("no-cycle");
    // A diamond is no cycle.
    await t.lead.updateTask({ taskId: "c9", addBlockedBy: ["c0", "free"] });
    expect((await taskOf(t.lead, "c9")).blockedBy).toEqual(["c0", "c8", "free"]);
  });
});

describeEachDatabase("the task list: changes of dependencies", (env) => {
  it("removing dependencies either way round stores the graph without them; a change of dependencies changes no other field of the tasks it touches", async () => {
    const t = await env().team("alice");
    await createTasks(t.lead, [["a"], ["b", "a"], ["c"], ["d"]]);
    await t.lead.updateTask({ taskId: "d", addBlockedBy: ["c"] });
    expect((await taskOf(t.lead, "b")).blockedBy).toEqual(["a"]);
    await t.lead.updateTask({ taskId: "b", removeBlockedBy: ["a"] });
    expect((await taskOf(t.lead, "b")).blockedBy).toEqual([]);
    await t.lead.updateTask({ taskId: "c", removeBlocks: ["d"] });
    expect((await taskOf(t.lead, "d")).blockedBy).toEqual([]);
    // A subject given with a dependency is the named task's: "d", now waiting on "a",
    // keeps its own.
    const subject = (await taskOf(t.lead, "d")).subject;
    await t.lead.updateTask({ taskId: "a", subject: "A, renamed", addBlocks: ["d"] });
    expect((await taskOf(t.lead, "a")).subject).toBe("A, renamed");
    expect(await taskOf(t.lead, "d")).toMatchObject({ subject, blockedBy: ["a"] });
  });

  it("a change of dependencies records one updated event per task it touches, in id order", async () => {
    const t = await env().team("alice");
    await createTasks(t.lead, [["a"], ["b"], ["c"]]);
    const w = watch(t.lead);
    await t.lead.updateTask({ taskId: "c", addBlocks: ["a", "b"] });
    const updated = (x: typeof w) =>
      x
        .events()
        .flatMap((e) =>
          e.change.case === "task" && e.change.value.change === TaskChange.UPDATED
            ? [e.change.value.task?.taskId ?? "?"]
            : [],
        );
    await w.until("three updated events", (x) => updated(x).length >= 3);
    w.stop();
    expect(updated(w)).toEqual(["a", "b", "c"]);
  });
});
