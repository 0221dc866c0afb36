import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole, RequestKind, RequestStatus, TaskState } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, type TestTeam } from "../support/harness.js";
import { refused, requestRecord } from "../support/protocol-helpers.js";
import {
  assign,
  claimAndApprove,
  claimRequest,
  claimResponse,
  handoffRequest,
  handoffResponse,
  signoffRequest,
  signoffResponse,
  taskOf,
} from "../support/task-helpers.js";

/**
 * Every rule of the task protocols over a live server: each refusal with its code, rule id
 * (message prefix and RuleViolation detail) and nothing changed (no message, request or task
 * moved); next to it, the legitimate case that passes.
 */
describeEachDatabase("task protocols: every rule, end to end", (env) => {
  /** What a refused call must leave as it was: the team's messages, requests and tasks. */
  async function snapshot(team: string): Promise<string> {
    const rows = await env().db.query<{ what: string }>(
      `SELECT 'm' || count(*) AS what FROM messages m JOIN teams t ON t.id = m.team_id WHERE t.name = $1
       UNION ALL
       SELECT * FROM (SELECT 'r ' || r.id || ' ' || r.status FROM requests r
                      JOIN teams t ON t.id = r.team_id WHERE t.name = $1 ORDER BY r.id) r
       UNION ALL
       SELECT * FROM (SELECT 't ' || k.task_id || ' ' || k.state || ' ' || coalesce(k.owner_id, 0)
                      FROM tasks k JOIN teams t ON t.id = k.team_id WHERE t.name = $1
                      ORDER BY k.task_id) k`,
      [team],
    );
    return rows.map((r) => r.what).join("\n");
  }

  async function expectRule(t: TestTeam, call: () => Promise<unknown>, rule: string, code: Code) {
    const before = await snapshot(t.name);
    const r = await refused(call);
    expect(r.code, `${rule}: ${r.message}`).toBe(code);
    expect(r.message.startsWith(`${rule}: `), r.message).toBe(true);
    expect(r.detail?.rule).toBe(rule);
    expect(r.detail?.description.length).toBeGreaterThan(10);
    expect(await snapshot(t.name)).toBe(before);
    return r;
  }

  it("claim-to-lead: a claim goes to the lead, from a teammate", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    await expectRule(
      t,
      () => alice.send({ to: "bob", message: claimRequest("t1") }),
      "claim-to-lead",
      Code.InvalidArgument,
    );
    await expectRule(
      t,
      () => t.lead.send({ to: "team-lead", message: claimRequest("t1") }),
      "claim-to-lead",
      Code.InvalidArgument,
    );
    const asked = await alice.send({ to: "team-lead", message: claimRequest("t1", "I know it") });
    expect(await requestRecord(t.lead, asked.requestId)).toMatchObject({
      kind: RequestKind.TASK_CLAIM,
      from: "alice",
      to: "team-lead",
      status: RequestStatus.PENDING,
    });
    expect(await taskOf(t.lead, "t1")).toMatchObject({ state: TaskState.UNOWNED, owner: "" });
  });

  it("lead-only-assign: only the lead answers claims and assigns; its approval gives the task", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const asked = await alice.send({ to: "team-lead", message: claimRequest("t1") });
    await expectRule(
      t,
      () => bob.send({ to: "alice", message: claimResponse(asked.requestId, true) }),
      "lead-only-assign",
      Code.PermissionDenied,
    );
    await expectRule(
      t,
      () => bob.send({ to: "alice", message: assign("t2") }),
      "lead-only-assign",
      Code.PermissionDenied,
    );
    await t.lead.send({ to: "alice", message: claimResponse(asked.requestId, true) });
    expect(await taskOf(alice, "t1")).toMatchObject({ state: TaskState.CLAIMED, owner: "alice" });
    const assigned = await t.lead.send({ to: "bob", message: assign("t2", "the parser") });
    const record = await requestRecord(t.lead, assigned.requestId);
    expect(record).toMatchObject({
      kind: RequestKind.TASK_ASSIGN,
      from: "team-lead",
      to: "bob",
      status: RequestStatus.APPROVED,
    });
    expect(record.resolvedAt).toEqual(record.createdAt);
    expect(await taskOf(bob, "t2")).toMatchObject({ state: TaskState.CLAIMED, owner: "bob" });
  });

  it("assign-to-teammate: the lead assigns to a teammate, not to itself nor to an observer", async () => {
    const t = await env().team("alice");
    await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
    await expectRule(
      t,
      () => t.lead.send({ to: "team-lead", message: assign("t1") }),
      "assign-to-teammate",
      Code.InvalidArgument,
    );
    await expectRule(
      t,
      () => t.lead.send({ to: "eye", message: assign("t1") }),
      "observer-not-addressable",
      Code.InvalidArgument,
    );
    const nobody = await expectRule(
      t,
      () => t.lead.send({ to: "nobody", message: assign("t1") }),
      "known-recipient",
      Code.NotFound,
    );
    expect([nobody.message, nobody.detail?.field]).toEqual([
      'known-recipient: no member "nobody" in this team (ListMembers shows who is there)',
      "to",
    ]);
    await t.lead.addMember({ name: "gone" });
    await t.lead.removeMember({ name: "gone" });
    const stopped = await expectRule(
      t,
      () => t.lead.send({ to: "gone", message: assign("t1") }),
      "known-recipient",
      Code.NotFound,
    );
    expect(stopped.message).toBe('known-recipient: "gone" is stopped and receives no new messages');
    await t.lead.send({ to: "alice", message: assign("t1") });
    expect((await taskOf(t.lead, "t1")).owner).toBe("alice");
  });

  it("reason-on-reject: rejecting a claim or declining a handoff says why", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const asked = await alice.send({ to: "team-lead", message: claimRequest("t1") });
    await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: claimResponse(asked.requestId, false, " ") }),
      "reason-on-reject",
      Code.InvalidArgument,
    );
    await t.lead.send({ to: "alice", message: claimResponse(asked.requestId, false, " bob's ") });
    expect(await requestRecord(t.lead, asked.requestId)).toMatchObject({
      status: RequestStatus.REJECTED,
      response: { kind: { case: "taskClaimResponse", value: { reason: "bob's" } } },
    });
    expect((await taskOf(t.lead, "t1")).state).toBe(TaskState.UNOWNED);

    await t.lead.send({ to: "alice", message: assign("t2") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t2") });
    await expectRule(
      t,
      () => bob.send({ to: "alice", message: handoffResponse(h.requestId, false) }),
      "reason-on-reject",
      Code.InvalidArgument,
    );
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, false, " busy ") });
    // Stored trimmed, as a claim's reason is: the owner reads the reason, not its padding.
    expect(await requestRecord(alice, h.requestId)).toMatchObject({
      status: RequestStatus.REJECTED,
      response: { kind: { case: "taskHandoffResponse", value: { reason: "busy" } } },
    });
    expect((await taskOf(alice, "t2")).owner).toBe("alice");
  });

  it("one-owner: a task with an owner or a pending claim is neither claimed nor assigned", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const pending = await alice.send({ to: "team-lead", message: claimRequest("t1") });
    const r1 = await expectRule(
      t,
      () => bob.send({ to: "team-lead", message: claimRequest("t1") }),
      "one-owner",
      Code.FailedPrecondition,
    );
    expect(r1.message).toContain(pending.requestId);
    expect(r1.message).toContain('"alice"');
    expect(r1.detail?.field).toBe("message.task_claim_request.task_id");
    const a1 = await expectRule(
      t,
      () => t.lead.send({ to: "bob", message: assign("t1") }),
      "one-owner",
      Code.FailedPrecondition,
    );
    expect(a1.detail?.field).toBe("message.task_assign.task_id");
    await t.lead.send({ to: "alice", message: claimResponse(pending.requestId, true) });
    const r2 = await expectRule(
      t,
      () => bob.send({ to: "team-lead", message: claimRequest("t1") }),
      "one-owner",
      Code.FailedPrecondition,
    );
    expect(r2.message).toContain('held by "alice"');
    await expectRule(
      t,
      () => t.lead.send({ to: "bob", message: assign("t1") }),
      "one-owner",
      Code.FailedPrecondition,
    );
    // Another task is free to claim.
    await claimAndApprove(t.lead, bob, "bob", "t2");
    expect((await taskOf(bob, "t2")).owner).toBe("bob");
  });

  it("owner-only-handoff: only the task's owner hands it off", async () => {
    const t = await env().team("alice", "bob", "carol");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const notOwner = await expectRule(
      t,
      () => bob.send({ to: "carol", message: handoffRequest("t1") }),
      "owner-only-handoff",
      Code.PermissionDenied,
    );
    expect(notOwner.detail?.field).toBe("message.task_handoff_request.task_id");
    expect(notOwner.message).toBe(
      'owner-only-handoff: task "t1" is held by "alice"; only its owner may hand it off',
    );
    const unheld = await expectRule(
      t,
      () => bob.send({ to: "carol", message: handoffRequest("never-claimed") }),
      "owner-only-handoff",
      Code.PermissionDenied,
    );
    expect(unheld.message).toBe(
      'owner-only-handoff: nobody holds task "never-claimed"; only its owner may hand it off',
    );
    await expectRule(
      t,
      () => t.lead.send({ to: "carol", message: handoffRequest("t1") }),
      "owner-only-handoff",
      Code.PermissionDenied,
    );
    const h = await alice.send({ to: "bob", message: handoffRequest("t1", "tests left") });
    expect(await requestRecord(bob, h.requestId)).toMatchObject({
      kind: RequestKind.TASK_HANDOFF,
      from: "alice",
      to: "bob",
      status: RequestStatus.PENDING,
    });
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    expect(await taskOf(bob, "t1")).toMatchObject({ state: TaskState.CLAIMED, owner: "bob" });
  });

  it("handoff-to-other, known-recipient, observer-not-addressable: a handoff goes to another active teammate or the lead", async () => {
    const t = await env().team("alice", "bob", "gone");
    const alice = t.member("alice").client;
    await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
    await t.lead.removeMember({ name: "gone" });
    await t.lead.send({ to: "alice", message: assign("t1") });
    await expectRule(
      t,
      () => alice.send({ to: "alice", message: handoffRequest("t1") }),
      "handoff-to-other",
      Code.InvalidArgument,
    );
    await expectRule(
      t,
      () => alice.send({ to: "gone", message: handoffRequest("t1") }),
      "known-recipient",
      Code.NotFound,
    );
    await expectRule(
      t,
      () => alice.send({ to: "eye", message: handoffRequest("t1") }),
      "observer-not-addressable",
      Code.InvalidArgument,
    );
    // Given back to the lead and accepted: unowned again.
    const h = await alice.send({ to: "team-lead", message: handoffRequest("t1") });
    await t.lead.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    expect(await taskOf(alice, "t1")).toMatchObject({ state: TaskState.UNOWNED, owner: "" });
  });

  it("addressee-only, response-to-requester, unknown-request: only the addressee answers a handoff, to its owner", async () => {
    const t = await env().team("alice", "bob", "carol");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const carol = t.member("carol").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t1") });
    const notAddressee = await expectRule(
      t,
      () => carol.send({ to: "alice", message: handoffResponse(h.requestId, true) }),
      "addressee-only",
      Code.PermissionDenied,
    );
    expect([notAddressee.message, notAddressee.detail?.field]).toEqual([
      `addressee-only: request ${h.requestId} was addressed to "bob"; only they may answer it`,
      "message.request_id",
    ]);
    const misaddressed = await expectRule(
      t,
      () => bob.send({ to: "carol", message: handoffResponse(h.requestId, true) }),
      "response-to-requester",
      Code.InvalidArgument,
    );
    expect(misaddressed.detail?.field).toBe("to");
    expect(misaddressed.message).toContain('goes to its requester "alice"');
    // A handoff's id is no claim: the lead cannot answer it as one.
    await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: claimResponse(h.requestId, true) }),
      "unknown-request",
      Code.NotFound,
    );
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    expect((await taskOf(bob, "t1")).owner).toBe("bob");
    // A task given back to the lead: only the lead answers, not a teammate (an approver may
    // answer the lead's requests, a teammate may not).
    const back = await bob.send({ to: "team-lead", message: handoffRequest("t1") });
    const forLead = await expectRule(
      t,
      () => carol.send({ to: "bob", message: handoffResponse(back.requestId, true) }),
      "addressee-only",
      Code.PermissionDenied,
    );
    expect(forLead.message).toBe(
      `addressee-only: request ${back.requestId} was addressed to "team-lead"; only they may answer it`,
    );
    expect((await taskOf(carol, "t1")).owner).toBe("bob");
  });

  it("once-only: a canceled claim is not answered", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const asked = await alice.send({ to: "team-lead", message: claimRequest("t1") });
    await alice.cancelRequest({ requestId: asked.requestId });
    const r = await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: claimResponse(asked.requestId, true) }),
      "once-only",
      Code.FailedPrecondition,
    );
    expect(r.message).toContain("canceled");
    expect((await taskOf(t.lead, "t1")).state).toBe(TaskState.UNOWNED);
    // With the claim no longer pending, the task may be claimed again.
    await claimAndApprove(t.lead, alice, "alice", "t1");
    expect((await taskOf(t.lead, "t1")).owner).toBe("alice");
  });

  it("owner-only-signoff, signoff-to-lead: the owner asks the lead for its sign-off", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const notOwner = await expectRule(
      t,
      () => bob.send({ to: "team-lead", message: signoffRequest("t1") }),
      "owner-only-signoff",
      Code.PermissionDenied,
    );
    expect(notOwner.detail?.field).toBe("message.result_signoff_request.task_id");
    expect(notOwner.message).toBe(
      'owner-only-signoff: task "t1" is held by "alice"; only its owner may ask for its sign-off',
    );
    await expectRule(
      t,
      () => alice.send({ to: "bob", message: signoffRequest("t1") }),
      "signoff-to-lead",
      Code.InvalidArgument,
    );
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1", "diff attached") });
    expect(await requestRecord(t.lead, s.requestId)).toMatchObject({
      kind: RequestKind.RESULT_SIGNOFF,
      from: "alice",
      status: RequestStatus.PENDING,
    });
  });

  it("lead-only-signoff, feedback-on-reject: only the lead signs off; a rejection says what to change and the owner keeps the task", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    await expectRule(
      t,
      () => bob.send({ to: "alice", message: signoffResponse(s.requestId, true) }),
      "lead-only-signoff",
      Code.PermissionDenied,
    );
    await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: signoffResponse(s.requestId, false, "  ") }),
      "feedback-on-reject",
      Code.InvalidArgument,
    );
    await t.lead.send({
      to: "alice",
      message: signoffResponse(s.requestId, false, "  add tests "),
    });
    expect(await taskOf(alice, "t1")).toMatchObject({ state: TaskState.CLAIMED, owner: "alice" });
    // The feedback is stored trimmed: what the owner is to change, without the padding.
    expect((await requestRecord(alice, s.requestId)).response?.kind).toEqual({
      case: "resultSignoffResponse",
      value: expect.objectContaining({ approve: false, feedback: "add tests" }),
    });
    const again = await alice.send({
      to: "team-lead",
      message: signoffRequest("t1", "with tests"),
    });
    await t.lead.send({ to: "alice", message: signoffResponse(again.requestId, true) });
    expect(await taskOf(alice, "t1")).toMatchObject({ state: TaskState.DONE, owner: "alice" });
  });

  it("task-done: a signed-off task is not claimed, assigned, handed off or signed off again", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    await t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
    for (const [who, call] of [
      ["claim", () => bob.send({ to: "team-lead", message: claimRequest("t1") })],
      ["assign", () => t.lead.send({ to: "bob", message: assign("t1") })],
      ["handoff", () => alice.send({ to: "bob", message: handoffRequest("t1") })],
      ["signoff", () => alice.send({ to: "team-lead", message: signoffRequest("t1") })],
    ] as const) {
      const r = await expectRule(t, call, "task-done", Code.FailedPrecondition);
      expect(r.message, who).toBe(
        'task-done: task "t1" is done (its result by "alice" was signed off): it cannot be claimed, assigned, handed off, signed off, changed or deleted again',
      );
    }
    // An undone task of the same team still moves.
    await t.lead.send({ to: "bob", message: assign("t2") });
    expect((await taskOf(bob, "t2")).owner).toBe("bob");
  });

  it("size-shape: a task id is 1 to 128 characters without control characters", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    for (const taskId of ["", "x".repeat(129), "a\nb"]) {
      await expectRule(
        t,
        () => alice.send({ to: "team-lead", message: claimRequest(taskId) }),
        "size-shape",
        Code.InvalidArgument,
      );
    }
    await alice.send({ to: "team-lead", message: claimRequest("ISSUE-13 / part 2 ✓") });
    expect((await taskOf(alice, "ISSUE-13 / part 2 ✓")).state).toBe(TaskState.UNOWNED);
  });

  it("one shared list: every member sees every task, owned by anyone; an unknown id is NotFound", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const eye = env().client(
      (await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token,
    );
    await t.lead.send({ to: "alice", message: assign("mine") });
    await alice.send({ to: "team-lead", message: claimRequest("free") });
    expect((await taskOf(bob, "mine")).owner).toBe("alice");
    const ids = async (c: typeof bob, q = {}) =>
      (await c.listTasks(q)).tasks.map((k) => k.taskId).sort();
    expect(await ids(bob, { owner: "alice" })).toEqual(["mine"]);
    expect(await ids(bob)).toEqual(["free", "mine"]);
    expect(await ids(alice)).toEqual(["free", "mine"]);
    expect(await ids(alice, { owner: "alice" })).toEqual(["mine"]);
    expect(await ids(t.lead)).toEqual(["free", "mine"]);
    expect(await ids(eye)).toEqual(["free", "mine"]);
    expect(await ids(eye, { state: TaskState.CLAIMED })).toEqual(["mine"]);
    expect((await taskOf(eye, "mine")).owner).toBe("alice");
    expect((await taskOf(bob, "free")).history.map((h) => h.from)).toEqual(["alice"]);
    const n = await refused(() => t.lead.getTask({ taskId: "never" }));
    expect(n.code).toBe(Code.NotFound);
    expect(n.message).toContain('"never"');
  });
});
