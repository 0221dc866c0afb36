import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { createPromptReader } from "../../client/prompt-reader.js";
import {
  MemberRole,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskState,
} from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import { describeEachDatabase, type TeamClient, type TestTeam } from "../support/harness.js";
import {
  inbox,
  kindOf,
  planRequest,
  planResponse,
  pollStatus,
  refused,
  requestRecord,
  shutdownRequest,
  text,
} from "../support/protocol-helpers.js";
import { awaitingBeyond, subscribedBeyond } from "../support/subscribed.js";
import { openSubscription } from "../support/subscription-reader.js";
import { sleep } from "../support/wait.js";

type MessageInit = Parameters<TeamClient["send"]>[0]["message"];

const permissionRequest = (toolName = "Bash", runtimeRequestId = "abcde"): MessageInit => ({
  kind: {
    case: "permissionRequest",
    value: { toolName, description: "list files", inputPreview: "ls -la", runtimeRequestId },
  },
});
const permissionResponse = (requestId: string, allow: boolean, reason = ""): MessageInit => ({
  kind: { case: "permissionResponse", value: { requestId, allow, reason } },
});

/** The envelopes of a member's inbox about one request. */
async function about(client: TeamClient, requestId: string): Promise<Envelope[]> {
  return (await inbox(client)).filter((e) => e.requestId === requestId);
}

/** A refusal with its code and rule id (message prefix and typed detail). */
async function expectRule(call: () => Promise<unknown>, rule: string, code: Code) {
  const r = await refused(call);
  expect(r.code, r.message).toBe(code);
  expect(r.message.startsWith(`${rule}: `), r.message).toBe(true);
  expect(r.detail?.rule).toBe(rule);
  return r;
}

/**
 * The permission protocol (a teammate's runtime asks the lead to allow a tool use) and the
 * approver (a member who answers the lead's approvals on its behalf), over a live server.
 */
describeEachDatabase("permission prompts and the approver", (env) => {
  async function withApprover(...teammates: string[]): Promise<{
    t: TestTeam;
    judge: TeamClient;
  }> {
    const t = await env().team(...teammates);
    const added = await t.lead.addMember({ name: "judge", role: MemberRole.APPROVER });
    expect(added.member?.role).toBe(MemberRole.APPROVER);
    return { t, judge: env().client(added.token) };
  }

  it("a permission request reaches the lead; the lead allows; the teammate gets the answer", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const asked = await alice.send({ to: "team-lead", message: permissionRequest() });
    expect(asked.requestId).toMatch(/^req_/);
    const pending = await requestRecord(t.lead, asked.requestId);
    expect(pending).toMatchObject({
      kind: RequestKind.PERMISSION,
      from: "alice",
      to: "team-lead",
      status: RequestStatus.PENDING,
      answeredBy: "",
    });
    // The default deadline: PERMISSION_TTL_MS, 5 minutes.
    expect(
      Number(pending.expiresAt?.seconds) - Number(pending.createdAt?.seconds),
    ).toBeGreaterThanOrEqual(299);
    const got = await about(t.lead, asked.requestId);
    expect(got.map((e) => [e.from, kindOf(e.message)])).toEqual([["alice", "permissionRequest"]]);
    expect(got[0]?.message?.kind.value).toMatchObject({
      toolName: "Bash",
      inputPreview: "ls -la",
      runtimeRequestId: "abcde",
    });

    await t.lead.send({ to: "alice", message: permissionResponse(asked.requestId, true) });
    const done = await requestRecord(alice, asked.requestId);
    expect(done.status).toBe(RequestStatus.APPROVED);
    expect(done.answeredBy).toBe("team-lead");
    const answer = await about(alice, asked.requestId);
    expect(answer.map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["team-lead", "permissionResponse"],
    ]);
    // A request is answered once.
    await expectRule(
      () => t.lead.send({ to: "alice", message: permissionResponse(asked.requestId, false, "no") }),
      "once-only",
      Code.FailedPrecondition,
    );
  });

  it("reason-on-reject: a deny needs a reason; with one the request is rejected", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const asked = await alice.send({ to: "team-lead", message: permissionRequest("Write") });
    await expectRule(
      () => t.lead.send({ to: "alice", message: permissionResponse(asked.requestId, false, " ") }),
      "reason-on-reject",
      Code.InvalidArgument,
    );
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
    await t.lead.send({
      to: "alice",
      message: permissionResponse(asked.requestId, false, "not on the main branch"),
    });
    const r = await requestRecord(alice, asked.requestId);
    expect(r.status).toBe(RequestStatus.REJECTED);
    expect(r.response?.kind.value).toMatchObject({
      allow: false,
      reason: "not on the main branch",
    });
  });

  it("lead-only-approval, permission-to-lead, no-broadcast: who asks whom, who answers", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await expectRule(
      () => alice.send({ to: "bob", message: permissionRequest() }),
      "permission-to-lead",
      Code.InvalidArgument,
    );
    await expectRule(
      () => t.lead.send({ to: "team-lead", message: permissionRequest() }),
      "permission-to-lead",
      Code.InvalidArgument,
    );
    await expectRule(
      () => alice.send({ to: "*", message: permissionRequest() }),
      "no-broadcast",
      Code.InvalidArgument,
    );
    const asked = await alice.send({ to: "team-lead", message: permissionRequest() });
    await expectRule(
      () => bob.send({ to: "alice", message: permissionResponse(asked.requestId, true) }),
      "lead-only-approval",
      Code.PermissionDenied,
    );
    // A permission answer naming a plan's request is the wrong kind.
    const plan = await alice.send({ to: "team-lead", message: planRequest("1. go") });
    await expectRule(
      () => t.lead.send({ to: "alice", message: permissionResponse(plan.requestId, true) }),
      "unknown-request",
      Code.NotFound,
    );
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
  });

  it("an unanswered permission request expires and the teammate is told", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const asked = await alice.send({
      to: "team-lead",
      message: permissionRequest(),
      ttl: { seconds: 1n, nanos: 0 },
    });
    const r = await pollStatus(alice, asked.requestId, RequestStatus.EXPIRED);
    expect(r.status).toBe(RequestStatus.EXPIRED);
    for (let i = 0; i < 100; i++) {
      if ((await about(alice, asked.requestId)).length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const told = await about(alice, asked.requestId);
    expect(told.map((e) => [e.from, kindOf(e.message)])).toEqual([["", "requestUpdate"]]);
    expect(told[0]?.message?.kind.value).toMatchObject({
      kind: RequestKind.PERMISSION,
      status: RequestStatus.EXPIRED,
    });
  });

  it("approver-acts-for-lead: an approver answers a plan for the lead; record, journal and both inboxes say so", async () => {
    const { t, judge } = await withApprover("alice");
    const alice = t.member("alice").client;
    const asked = await alice.send({ to: "team-lead", message: planRequest("1. build") });
    // The approver sees the lead's pending approvals.
    expect(
      (await judge.listRequests({ status: RequestStatus.PENDING })).requests.map(
        (r) => r.requestId,
      ),
    ).toEqual([asked.requestId]);

    await judge.send({ to: "alice", message: planResponse(asked.requestId, true) });
    const r = await requestRecord(t.lead, asked.requestId);
    expect(r).toMatchObject({
      status: RequestStatus.APPROVED,
      to: "team-lead",
      answeredBy: "judge",
    });
    // The plan's side effect is the lead's: alice inherits the lead's mode.
    expect(r.response?.kind.value).toMatchObject({ permissionMode: PermissionMode.DEFAULT });
    // The teammate and the lead both receive the answer, from the approver.
    for (const reader of [alice, t.lead]) {
      const got = (await about(reader, asked.requestId)).filter(
        (e) => kindOf(e.message) === "planApprovalResponse",
      );
      expect(got.map((e) => [e.from, e.to])).toEqual([["judge", "alice"]]);
    }
    // Each reads it from its own side: alice is answered; the lead is told what was decided
    // in its name, and that nothing is asked of it.
    const rendered = async (client: TeamClient, reader: string) => {
      const answer = (await about(client, asked.requestId)).find(
        (e) => kindOf(e.message) === "planApprovalResponse",
      );
      return answer ? createPromptReader({ reader }).render(answer) : "";
    };
    expect(await rendered(alice, "alice")).toContain(
      `judge approved your plan (request ${asked.requestId}). Go ahead`,
    );
    const leadsCopy = await rendered(t.lead, "team-lead");
    expect(leadsCopy).toContain(
      `judge approved alice's plan (request ${asked.requestId}) on your behalf`,
    );
    expect(leadsCopy).toContain("alice has been told; nothing is asked of you.");
    expect(leadsCopy).not.toContain("your plan");
    // The journal names who answered and for whom.
    const journal = await t.lead.listAttempts({ requestId: asked.requestId });
    expect(journal.attempts.map((a) => [a.member, a.action, a.onBehalfOf]).sort()).toEqual([
      ["alice", "plan_approval_request", ""],
      ["judge", "plan_approval_response", "team-lead"],
    ]);
    // Answered once: the lead comes too late.
    await expectRule(
      () => t.lead.send({ to: "alice", message: planResponse(asked.requestId, false, "no") }),
      "once-only",
      Code.FailedPrecondition,
    );
  });

  it("an approver allows a permission, approves a claim and signs off a result", async () => {
    const { t, judge } = await withApprover("alice");
    const alice = t.member("alice").client;
    const perm = await alice.send({ to: "team-lead", message: permissionRequest() });
    await expectRule(
      () => judge.send({ to: "alice", message: permissionResponse(perm.requestId, false) }),
      "reason-on-reject",
      Code.InvalidArgument,
    );
    await judge.send({
      to: "alice",
      message: permissionResponse(perm.requestId, false, "ask me later"),
    });
    expect(await requestRecord(alice, perm.requestId)).toMatchObject({
      status: RequestStatus.REJECTED,
      answeredBy: "judge",
    });

    const claim = await alice.send({
      to: "team-lead",
      message: { kind: { case: "taskClaimRequest", value: { taskId: "t1", note: "" } } },
    });
    await judge.send({
      to: "alice",
      message: {
        kind: {
          case: "taskClaimResponse",
          value: { requestId: claim.requestId, approve: true, reason: "" },
        },
      },
    });
    expect((await t.lead.getTask({ taskId: "t1" })).task?.owner).toBe("alice");

    const signoff = await alice.send({
      to: "team-lead",
      message: { kind: { case: "resultSignoffRequest", value: { taskId: "t1", result: "done" } } },
    });
    await judge.send({
      to: "alice",
      message: {
        kind: {
          case: "resultSignoffResponse",
          value: { requestId: signoff.requestId, approve: true, feedback: "" },
        },
      },
    });
    expect((await t.lead.getTask({ taskId: "t1" })).task?.state).toBe(TaskState.DONE);
    for (const id of [claim.requestId, signoff.requestId]) {
      expect((await requestRecord(t.lead, id)).answeredBy).toBe("judge");
      expect((await about(t.lead, id)).map((e) => e.from)).toContain("judge");
    }
  });

  it("approver-acts-for-lead refuses everything else a lead does; text passes", async () => {
    const { t, judge } = await withApprover("alice");
    const alice = t.member("alice").client;
    const calls: [string, () => Promise<unknown>][] = [
      ["shutdown", () => judge.send({ to: "alice", message: shutdownRequest() })],
      [
        "assign",
        () =>
          judge.send({
            to: "alice",
            message: { kind: { case: "taskAssign", value: { taskId: "t2", note: "" } } },
          }),
      ],
      ["plan", () => judge.send({ to: "team-lead", message: planRequest("mine") })],
      ["AddMember", () => judge.addMember({ name: "sneaky" })],
      ["RemoveMember", () => judge.removeMember({ name: "alice" })],
      [
        "WatchTeam",
        async () => {
          for await (const _ of judge.watchTeam({})) break;
        },
      ],
      ["CreateTask", () => judge.createTask({ subject: "x" })],
    ];
    for (const [name, call] of calls) {
      const r = await refused(call);
      expect(r.code, name).toBe(Code.PermissionDenied);
      expect(r.detail?.rule, `${name}: ${r.message}`).toBe("approver-acts-for-lead");
    }
    await judge.send({ to: "alice", message: text("I answer for the lead today") });
    expect((await inbox(alice)).map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["judge", "text"],
    ]);
  });
});

/**
 * What an answer wakes: the requester's AwaitRequest (permission.ts's afterCommit, through
 * the approver's plan too), the lead's open stream for the approver's copy (on-behalf.ts);
 * and the copy is the approver's only: a lead's own answer stores none.
 */
describeEachDatabase("permission answers: who is woken, who gets a copy", (env) => {
  const within10s = <T>(what: string, p: Promise<T>) =>
    Promise.race([
      p,
      sleep(10_000).then(() => {
        throw new Error(`not within 10 s: ${what}`);
      }),
    ]);

  it("the lead's own answer wakes the requester's AwaitRequest and stores no copy for the lead", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const asked = await alice.send({ to: "team-lead", message: permissionRequest() });
    const before = env().app.waiters.size;
    const waiting = alice.awaitRequest({ requestId: asked.requestId });
    await awaitingBeyond(env().app, before);
    await t.lead.send({ to: "alice", message: permissionResponse(asked.requestId, true) });
    const got = await within10s("the answer", waiting);
    expect(got.request?.status).toBe(RequestStatus.APPROVED);
    expect((await about(t.lead, asked.requestId)).map((e) => kindOf(e.message))).toEqual([
      "permissionRequest",
    ]);
  });

  it("the approver's answer wakes the requester's AwaitRequest, and the lead's open stream hears the copy live", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const added = await t.lead.addMember({ name: "judge", role: MemberRole.APPROVER });
    const judge = env().client(added.token);
    const asked = await alice.send({ to: "team-lead", message: permissionRequest() });
    const waiters = env().app.waiters.size;
    const waiting = alice.awaitRequest({ requestId: asked.requestId });
    await awaitingBeyond(env().app, waiters);
    const before = env().app.hub.waiting;
    const stream = openSubscription(t.lead);
    await subscribedBeyond(env().app, before);
    await judge.send({ to: "alice", message: permissionResponse(asked.requestId, false, "no") });
    const got = await within10s("the answer", waiting);
    expect(got.request?.status).toBe(RequestStatus.REJECTED);
    const read = await stream.until(
      (e) =>
        e.event.case === "envelope" && e.event.value.message?.kind.case === "permissionResponse",
    );
    stream.close();
    expect(read.map((e) => e.event.case)).not.toContain("heartbeat");
    expect(read.at(-1)?.event.value).toMatchObject({ from: "judge", requestId: asked.requestId });
  });
});
