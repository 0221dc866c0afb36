import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole, TaskProgress, TaskState } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, type TestTeam } from "../support/harness.js";
import { refused } from "../support/protocol-helpers.js";
import {
  assign,
  claimAndApprove,
  claimRequest,
  claimResponse,
  createTasks,
  handoffRequest,
  signoffRequest,
  signoffResponse,
  taskListSnapshot,
  taskOf,
} from "../support/task-helpers.js";

/**
 * Every rule of the task list over a live server: each refusal with its code, rule id (message
 * prefix and RuleViolation detail) and nothing changed (tasks, dependencies, events, messages,
 * requests); next to it, the legitimate case that passes.
 */
describeEachDatabase("the task list: every rule, end to end", (env) => {
  async function expectRule(t: TestTeam, call: () => Promise<unknown>, rule: string, code: Code) {
    const before = await taskListSnapshot(env().db, t.name);
    const r = await refused(call);
    expect([r.code, r.detail?.rule], `${rule}: ${r.message}`).toEqual([code, rule]);
    expect(r.message.startsWith(`${rule}: `), r.message).toBe(true);
    expect(r.detail?.description.length).toBeGreaterThan(10);
    expect(await taskListSnapshot(env().db, t.name)).toBe(before);
    return r;
  }

  it("task-blocked: a claim, an assignment, and a claim's approval of a task with open blockers, naming them", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    await createTasks(t.lead, [["a"], ["b"], ["c", "a", "b"], ["d"]]);
    const claim = await expectRule(
      t,
      () => alice.send({ to: "team-lead", message: claimRequest("c") }),
      "task-blocked",
      Code.FailedPrecondition,
    );
    expect(claim.message).toBe(
      'task-blocked: task "c" is blocked by "a", "b", not yet completed: it can be claimed or assigned once those tasks are completed (ListTasks with ready lists what can be claimed now)',
    );
    expect(claim.detail?.field).toBe("message.task_claim_request.task_id");
    const assigned = await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: assign("c") }),
      "task-blocked",
      Code.FailedPrecondition,
    );
    expect(assigned.detail?.field).toBe("message.task_assign.task_id");
    // A claim made while d was ready, approved after the lead made it wait on a.
    const asked = await alice.send({ to: "team-lead", message: claimRequest("d") });
    await t.lead.updateTask({ taskId: "d", addBlockedBy: ["a"] });
    const approval = await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: claimResponse(asked.requestId, true) }),
      "task-blocked",
      Code.FailedPrecondition,
    );
    expect(approval.message).toBe(
      'task-blocked: task "d" is blocked by "a", not yet completed: it can be claimed or assigned once that task is completed (ListTasks with ready lists what can be claimed now)',
    );
    expect(approval.detail?.field).toBe("message.task_claim_response.request_id");
    // Ready tasks move.
    await claimAndApprove(t.lead, t.member("bob").client, "bob", "b");
    await t.lead.send({ to: "alice", message: assign("a") });
    expect((await taskOf(alice, "a")).owner).toBe("alice");
  });

  it("task-blocked: a held task the lead made wait is not signed off, neither asked nor approved, until its blocker is completed", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    await createTasks(t.lead, [["a"], ["b"], ["c"]]);
    await claimAndApprove(t.lead, alice, "alice", "b");
    await claimAndApprove(t.lead, alice, "alice", "c");
    // b is held when the lead makes it wait on a: alice may not ask for its sign-off yet.
    await t.lead.updateTask({ taskId: "b", addBlockedBy: ["a"] });
    const asked = await expectRule(
      t,
      () => alice.send({ to: "team-lead", message: signoffRequest("b") }),
      "task-blocked",
      Code.FailedPrecondition,
    );
    expect(asked.message).toContain('"b" is blocked by "a"');
    expect(asked.message).toContain("remove_blocked_by");
    expect(asked.detail?.field).toBe("message.result_signoff_request.task_id");
    // c's sign-off was asked while c was ready; the lead makes c wait on a before answering.
    const pending = await alice.send({ to: "team-lead", message: signoffRequest("c") });
    await t.lead.updateTask({ taskId: "c", addBlockedBy: ["a"] });
    const approval = await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: signoffResponse(pending.requestId, true) }),
      "task-blocked",
      Code.FailedPrecondition,
    );
    expect(approval.detail?.field).toBe("message.result_signoff_response.request_id");
    expect((await taskOf(alice, "c")).status).not.toBe(TaskProgress.COMPLETED);
    // A rejection needs no such wait; once a is completed, b's sign-off goes through.
    await t.lead.send({
      to: "alice",
      message: signoffResponse(pending.requestId, false, "wait for a"),
    });
    await claimAndApprove(t.lead, t.member("bob").client, "bob", "a");
    const bob = t.member("bob").client;
    const aDone = await bob.send({ to: "team-lead", message: signoffRequest("a") });
    await t.lead.send({ to: "bob", message: signoffResponse(aDone.requestId, true) });
    const bDone = await alice.send({ to: "team-lead", message: signoffRequest("b") });
    await t.lead.send({ to: "alice", message: signoffResponse(bDone.requestId, true) });
    expect((await taskOf(alice, "b")).status).toBe(TaskProgress.COMPLETED);
  });

  it("no-cycle: a dependency closing a cycle is refused naming it; a new task cannot wait on itself", async () => {
    const t = await env().team("alice");
    await createTasks(t.lead, [["a"], ["b", "a"], ["c", "b"]]);
    const r = await expectRule(
      t,
      () => t.lead.updateTask({ taskId: "a", addBlockedBy: ["c"] }),
      "no-cycle",
      Code.FailedPrecondition,
    );
    expect([r.message, r.detail?.field]).toEqual([
      'no-cycle: this would close the cycle "a" -> "c" -> "b" -> "a" (each waits on the next): nothing was changed',
      "add_blocked_by",
    ]);
    // Through add_blocks, the field named is that one.
    const viaBlocks = await expectRule(
      t,
      () => t.lead.updateTask({ taskId: "c", addBlocks: ["a"] }),
      "no-cycle",
      Code.FailedPrecondition,
    );
    expect([viaBlocks.message, viaBlocks.detail?.field]).toEqual([
      'no-cycle: this would close the cycle "c" -> "b" -> "a" -> "c" (each waits on the next): nothing was changed',
      "add_blocks",
    ]);
    const newSelf = await expectRule(
      t,
      () => t.lead.createTask({ taskId: "x", subject: "x", blockedBy: ["a", "x"] }),
      "no-cycle",
      Code.FailedPrecondition,
    );
    expect([newSelf.message, newSelf.detail?.field]).toEqual([
      'no-cycle: task "x" cannot wait on itself',
      "blocked_by",
    ]);
    // A task made to wait on itself, either way round: refused naming the field it came in.
    const selfLoops: [{ addBlockedBy?: string[]; addBlocks?: string[] }, string][] = [
      [{ addBlockedBy: ["a"] }, "add_blocked_by"],
      [{ addBlocks: ["a"] }, "add_blocks"],
    ];
    for (const [change, field] of selfLoops) {
      const self = await expectRule(
        t,
        () => t.lead.updateTask({ taskId: "a", ...change }),
        "no-cycle",
        Code.FailedPrecondition,
      );
      expect([self.message, self.detail?.field]).toEqual([
        'no-cycle: task "a" cannot wait on itself',
        field,
      ]);
    }
    expect((await taskOf(t.lead, "a")).blockedBy).toEqual([]);
    await t.lead.updateTask({ taskId: "c", addBlockedBy: ["a"] });
    expect((await taskOf(t.lead, "c")).blockedBy).toEqual(["a", "b"]);
  });

  it("task-exists: dependencies name tasks of the team that are not deleted", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const other = await env().team("zed");
    await createTasks(other.lead, [["elsewhere"]]);
    await createTasks(t.lead, [["a"], ["gone"]]);
    await t.lead.deleteTask({ taskId: "gone" });
    const create = await expectRule(
      t,
      () => alice.createTask({ subject: "s", blockedBy: ["a", "nope", "elsewhere"] }),
      "task-exists",
      Code.NotFound,
    );
    expect([create.message, create.detail?.field]).toEqual([
      'task-exists: no task "elsewhere", "nope" in this team: a dependency names a task of the team that is not deleted (CreateTask makes one)',
      "blocked_by",
    ]);
    const deleted = await expectRule(
      t,
      () => t.lead.updateTask({ taskId: "a", addBlockedBy: ["gone"] }),
      "task-exists",
      Code.NotFound,
    );
    expect([deleted.message, deleted.detail?.field]).toEqual([
      'task-exists: task "gone" was deleted: a dependency names a task of the team that is not deleted (CreateTask makes one)',
      "add_blocked_by",
    ]);
    const both = await expectRule(
      t,
      () => t.lead.updateTask({ taskId: "a", addBlocks: ["nope", "gone"] }),
      "task-exists",
      Code.NotFound,
    );
    expect([both.message, both.detail?.field]).toEqual([
      'task-exists: no task "nope" in this team; task "gone" was deleted: a dependency names a task of the team that is not deleted (CreateTask makes one)',
      "add_blocks",
    ]);
    const made = await alice.createTask({ subject: "s", blockedBy: ["a"] });
    expect(made.task?.blockedBy).toEqual(["a"]);
  });

  it("owner-or-lead-updates: a teammate changes only a task it holds, never dependencies; only the lead deletes; the lead does not start tasks", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await createTasks(t.lead, [["a"], ["free"]]);
    await t.lead.send({ to: "alice", message: assign("a") });
    const held = await expectRule(
      t,
      () => bob.updateTask({ taskId: "a", subject: "mine now" }),
      "owner-or-lead-updates",
      Code.PermissionDenied,
    );
    expect([held.message, held.detail?.field]).toEqual([
      'owner-or-lead-updates: task "a" is held by "alice"; only its owner or the lead may change it',
      "task_id",
    ]);
    const unowned = await expectRule(
      t,
      () => bob.updateTask({ taskId: "free", status: TaskProgress.IN_PROGRESS }),
      "owner-or-lead-updates",
      Code.PermissionDenied,
    );
    expect(unowned.message).toBe(
      'owner-or-lead-updates: nobody holds task "free" (claim it first: task_claim_request to the lead); only its owner or the lead may change it',
    );
    for (const call of [
      () => alice.updateTask({ taskId: "a", addBlockedBy: ["free"] }),
      () => alice.updateTask({ taskId: "a", status: TaskProgress.DELETED }),
      () => alice.deleteTask({ taskId: "a" }),
      () => t.lead.updateTask({ taskId: "a", status: TaskProgress.IN_PROGRESS }),
    ]) {
      await expectRule(t, call, "owner-or-lead-updates", Code.PermissionDenied);
    }
    await alice.updateTask({
      taskId: "a",
      subject: "A, reworded",
      status: TaskProgress.IN_PROGRESS,
    });
    await t.lead.updateTask({ taskId: "free", description: "the lead edits any task" });
    expect(await taskOf(bob, "a")).toMatchObject({
      subject: "A, reworded",
      status: TaskProgress.IN_PROGRESS,
    });
    expect((await taskOf(bob, "free")).description).toBe("the lead edits any task");
  });

  it("signoff-completes: nobody sets completed or in_review; the approved sign-off does", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    await createTasks(t.lead, [["a"]]);
    await claimAndApprove(t.lead, alice, "alice", "a");
    for (const [who, status] of [
      [alice, TaskProgress.COMPLETED],
      [t.lead, TaskProgress.COMPLETED],
      [alice, TaskProgress.IN_REVIEW],
    ] as const) {
      await expectRule(
        t,
        () => who.updateTask({ taskId: "a", status }),
        "signoff-completes",
        Code.InvalidArgument,
      );
    }
    const s = await alice.send({ to: "team-lead", message: signoffRequest("a") });
    await t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
    expect((await taskOf(alice, "a")).status).toBe(TaskProgress.COMPLETED);
  });

  it("task-deleted: nothing claims, assigns, changes or deletes a deleted task", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    await createTasks(t.lead, [["a"], ["b"]]);
    await t.lead.deleteTask({ taskId: "a" });
    for (const call of [
      () => alice.send({ to: "team-lead", message: claimRequest("a") }),
      () => t.lead.send({ to: "alice", message: assign("a") }),
      () => t.lead.updateTask({ taskId: "a", subject: "back" }),
      () => t.lead.deleteTask({ taskId: "a" }),
    ]) {
      const r = await expectRule(t, call, "task-deleted", Code.FailedPrecondition);
      expect(r.message).toBe(
        'task-deleted: task "a" was deleted by the lead: it cannot be claimed, assigned, handed off, signed off, changed or depended on',
      );
    }
    expect((await taskOf(alice, "a")).status).toBe(TaskProgress.DELETED);
    await t.lead.send({ to: "alice", message: assign("b") });
  });

  it("task-done: a completed task is not changed, deleted, nor made to wait", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    await createTasks(t.lead, [["a"], ["b"]]);
    await t.lead.send({ to: "alice", message: assign("a") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("a") });
    await t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
    for (const call of [
      () => t.lead.updateTask({ taskId: "a", subject: "again" }),
      () => t.lead.deleteTask({ taskId: "a" }),
      () => t.lead.updateTask({ taskId: "b", addBlocks: ["a"] }),
      () => alice.send({ to: "bob", message: handoffRequest("a") }),
    ]) {
      await expectRule(t, call, "task-done", Code.FailedPrecondition);
    }
    // Named by the field it came in; a waiting task whose id sorts before the completed one
    // is no excuse for it.
    await createTasks(t.lead, [["0"]]);
    for (const [call, field] of [
      [() => t.lead.updateTask({ taskId: "a", subject: "again" }), "task_id"],
      [() => t.lead.deleteTask({ taskId: "a" }), "task_id"],
      [() => t.lead.updateTask({ taskId: "0", addBlocks: ["a"] }), "add_blocks"],
    ] as const) {
      const r = await expectRule(t, call, "task-done", Code.FailedPrecondition);
      expect(r.detail?.field).toBe(field);
    }
    // Waiting on a completed task is allowed (it blocks nothing).
    await t.lead.updateTask({ taskId: "b", addBlockedBy: ["a"] });
    expect(await taskOf(alice, "b")).toMatchObject({
      blockedBy: ["a"],
      openBlockers: [],
      ready: true,
    });
  });

  it("a task id is created once (AlreadyExists), an unknown one is NotFound, an observer creates nothing", async () => {
    const t = await env().team("alice");
    await createTasks(t.lead, [["a"]]);
    await t.member("alice").client.send({ to: "team-lead", message: claimRequest("claimed") });
    for (const taskId of ["a", "claimed"]) {
      const before = await taskListSnapshot(env().db, t.name);
      const r = await refused(() => t.lead.createTask({ taskId, subject: "again" }));
      expect([r.code, r.message]).toEqual([
        Code.AlreadyExists,
        `task "${taskId}" exists already in this team: change it with UpdateTask, or leave task_id unset for a new number`,
      ]);
      expect(await taskListSnapshot(env().db, t.name)).toBe(before);
    }
    for (const call of [
      () => t.lead.updateTask({ taskId: "never", subject: "s" }),
      () => t.lead.updateTask({ taskId: "never", addBlocks: ["a"] }),
      () => t.lead.deleteTask({ taskId: "never" }),
    ]) {
      const r = await refused(call);
      expect([r.code, r.message]).toEqual([
        Code.NotFound,
        'no task "never" in this team: CreateTask makes one (a claim or an assignment records one too)',
      ]);
    }
    expect((await refused(() => t.lead.getTask({ taskId: "never" }))).code).toBe(Code.NotFound);
    const eye = env().client(
      (await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token,
    );
    await expectRule(
      t,
      () => eye.createTask({ subject: "s" }),
      "observer-read-only",
      Code.PermissionDenied,
    );
    expect((await taskOf(eye, "a")).state).toBe(TaskState.UNOWNED);
  });
});
