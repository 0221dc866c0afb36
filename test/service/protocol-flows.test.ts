import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import {
  MemberStatus,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import type { SubscribeResponse } from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import {
  inbox,
  kindOf,
  planRequest,
  planResponse,
  refused,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";
import { envelopesOf, openSubscription } from "../support/subscription-reader.js";
import { assign } from "../support/task-helpers.js";

/** Reads a stream to its end; returns what came and how it ended. */
async function drain(stream: AsyncIterable<SubscribeResponse>) {
  const events: SubscribeResponse[] = [];
  try {
    for await (const e of stream) events.push(e);
    return { events, error: undefined };
  } catch (err) {
    return { events, error: ConnectError.from(err) };
  }
}

describeEachDatabase("protocol flows (the seed's two flows, end to end)", (env) => {
  it("shutdown approved: the lead holds the approval, the teammate's stream ends cleanly, its token stops working", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const before = env().app.hub.waiting;
    const aliceStream = drain(alice.subscribe({}));
    await subscribedBeyond(env().app, before);

    const asked = await t.lead.send({ to: "alice", message: shutdownRequest("work is done") });
    expect(asked.requestId).toMatch(/^req_[A-Za-z0-9_-]{22}$/);
    const [request] = await inbox(alice);
    expect(request).toMatchObject({ from: "team-lead", to: "alice", requestId: asked.requestId });
    expect(request?.message?.kind).toEqual({
      case: "shutdownRequest",
      value: expect.objectContaining({ reason: "work is done" }),
    });

    await alice.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) });

    const ended = await aliceStream;
    expect(ended.error).toBeUndefined();
    const delivered = ended.events.flatMap((e) =>
      e.event.case === "envelope" ? [e.event.value] : [],
    );
    expect(delivered.map((e) => e.requestId)).toEqual([asked.requestId]);

    const leadInbox = await inbox(t.lead);
    expect(leadInbox).toHaveLength(1);
    expect(leadInbox[0]).toMatchObject({ from: "alice", requestId: asked.requestId });
    expect(leadInbox[0]?.message?.kind).toEqual({
      case: "shutdownResponse",
      value: expect.objectContaining({ requestId: asked.requestId, approve: true }),
    });

    const afterwards = await refused(() =>
      alice.send({ to: "team-lead", message: text("still here?") }),
    );
    expect(afterwards.code).toBe(Code.Unauthenticated);
    const members = (await t.lead.listMembers({})).members;
    expect(members.find((m) => m.name === "alice")?.status).toBe(MemberStatus.STOPPED);
    const record = (await t.lead.getRequest({ requestId: asked.requestId })).request;
    expect(record).toMatchObject({
      kind: RequestKind.SHUTDOWN,
      status: RequestStatus.APPROVED,
      from: "team-lead",
      to: "alice",
    });
    expect(kindOf(record?.response)).toBe("shutdownResponse");
    expect(record?.resolvedAt).toBeDefined();
  });

  it("shutdown rejected with a reason: the lead receives the reason, the teammate keeps working, its open stream too", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const before = env().app.hub.waiting;
    const stream = openSubscription(alice);
    await subscribedBeyond(env().app, before);
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    await alice.send({
      to: "team-lead",
      message: shutdownResponse(asked.requestId, false, "  still running the migration  "),
    });
    const [answer] = await inbox(t.lead);
    expect(answer?.message?.kind).toEqual({
      case: "shutdownResponse",
      value: expect.objectContaining({ approve: false, reason: "still running the migration" }),
    });
    expect((await alice.send({ to: "team-lead", message: text("carrying on") })).seq).toBe(2n);
    const record = (await alice.getRequest({ requestId: asked.requestId })).request;
    expect(record?.status).toBe(RequestStatus.REJECTED);
    const me = (await alice.listMembers({})).members.find((m) => m.name === "alice");
    expect(me?.status).toBe(MemberStatus.ACTIVE);
    // The stream opened before the rejection delivers what comes after it.
    await t.lead.send({ to: "alice", message: text("after the rejection") });
    const delivered = envelopesOf(await stream.envelopes(2));
    expect(delivered.map((e) => e.message?.kind.case)).toEqual(["shutdownRequest", "text"]);
    stream.close();
  });

  it("plan rejected with feedback, resubmitted, approved with the lead's permission mode (plan becomes default)", async () => {
    const created = await env()
      .client()
      .createTeam({
        team: uniqueName("planners"),
        leadPermissionMode: PermissionMode.PLAN,
      });
    const lead = env().client(created.token);
    // Added without a mode: it starts in the lead's own, so it plans before acting.
    const added = await lead.addMember({ name: "coder" });
    expect(added.member?.permissionMode).toBe(PermissionMode.PLAN);
    const coder = env().client(added.token);

    const first = await coder.send({ to: "team-lead", message: planRequest("rm -rf src/") });
    expect(first.requestId).not.toBe("");
    const [seen] = await inbox(lead);
    expect(seen).toMatchObject({ from: "coder", requestId: first.requestId });
    await lead.send({
      to: "coder",
      message: planResponse(first.requestId, false, "too dangerous; move to trash"),
    });

    const second = await coder.send({
      to: "team-lead",
      message: planRequest("mv src/ /tmp/trash/"),
    });
    await lead.send({
      to: "coder",
      message: {
        kind: {
          case: "planApprovalResponse",
          // A client cannot choose the mode: the server replaces it.
          value: {
            requestId: second.requestId,
            approve: true,
            permissionMode: PermissionMode.BYPASS_PERMISSIONS,
          },
        },
      },
    });

    const answers = (await inbox(coder)).map((e) => e.message?.kind);
    expect(answers).toEqual([
      {
        case: "planApprovalResponse",
        value: expect.objectContaining({
          requestId: first.requestId,
          approve: false,
          feedback: "too dangerous; move to trash",
          permissionMode: PermissionMode.UNSPECIFIED,
        }),
      },
      {
        case: "planApprovalResponse",
        value: expect.objectContaining({
          requestId: second.requestId,
          approve: true,
          permissionMode: PermissionMode.DEFAULT,
        }),
      },
    ]);
    const me = (await coder.listMembers({})).members.find((m) => m.name === "coder");
    expect(me?.permissionMode).toBe(PermissionMode.DEFAULT);
    const records = (await lead.listRequests({ kind: RequestKind.PLAN_APPROVAL })).requests;
    expect(records.map((r) => r.status)).toEqual([RequestStatus.APPROVED, RequestStatus.REJECTED]);
  });

  it("plan approval inherits a lead mode other than plan unchanged; a blank rejection says 'Plan needs revision'", async () => {
    const created = await env()
      .client()
      .createTeam({
        team: uniqueName("editors"),
        leadPermissionMode: PermissionMode.ACCEPT_EDITS,
      });
    const lead = env().client(created.token);
    // Added in plan mode by choice; approval hands over the lead's mode.
    const added = await lead.addMember({ name: "coder", permissionMode: PermissionMode.PLAN });
    expect(added.member?.permissionMode).toBe(PermissionMode.PLAN);
    const coder = env().client(added.token);
    const modeOf = async (name: string) =>
      (await lead.listMembers({})).members.find((m) => m.name === name)?.permissionMode;
    expect(await modeOf("coder")).toBe(PermissionMode.PLAN);
    const a = await coder.send({ to: "team-lead", message: planRequest("plan a") });
    await lead.send({ to: "coder", message: planResponse(a.requestId, false, "   ") });
    // A rejection hands over nothing: the teammate stays in plan mode.
    expect(await modeOf("coder")).toBe(PermissionMode.PLAN);
    const b = await coder.send({ to: "team-lead", message: planRequest("plan b") });
    await lead.send({ to: "coder", message: planResponse(b.requestId, true, "  go ahead  ") });
    const [rejection, approval] = (await inbox(coder)).map((e) => e.message?.kind);
    expect(rejection?.value).toMatchObject({ approve: false, feedback: "Plan needs revision" });
    expect(approval?.value).toMatchObject({
      approve: true,
      feedback: "go ahead",
      permissionMode: PermissionMode.ACCEPT_EDITS,
    });
    expect(await modeOf("coder")).toBe(PermissionMode.ACCEPT_EDITS);
  });

  it("AddMember: the mode it is given, else the lead's; an unknown mode is refused naming the field; re-adding sets it again", async () => {
    const created = await env()
      .client()
      .createTeam({ team: uniqueName("modes"), leadPermissionMode: PermissionMode.ACCEPT_EDITS });
    const lead = env().client(created.token);
    expect((await lead.addMember({ name: "a" })).member?.permissionMode).toBe(
      PermissionMode.ACCEPT_EDITS,
    );
    const planner = await lead.addMember({ name: "b", permissionMode: PermissionMode.PLAN });
    expect(planner.member?.permissionMode).toBe(PermissionMode.PLAN);
    const unknown = await lead
      .addMember({ name: "c", permissionMode: 99 as PermissionMode })
      .then(() => undefined, ConnectError.from);
    expect(unknown?.code).toBe(Code.InvalidArgument);
    expect(unknown?.rawMessage).toContain("permission_mode");
    expect((await lead.listMembers({})).members.map((m) => m.name)).not.toContain("c");
    await lead.removeMember({ name: "b" });
    const back = await lead.addMember({ name: "b", permissionMode: PermissionMode.DEFAULT });
    expect(back.member?.permissionMode).toBe(PermissionMode.DEFAULT);
  });

  it("task notifications reach the lead with the seed's summary when none is given", async () => {
    const t = await env().team("worker");
    const worker = t.member("worker").client;
    const notify = (status: TaskStatus, extra: Record<string, unknown> = {}) =>
      worker.send({
        to: "team-lead",
        message: {
          kind: {
            case: "taskNotification",
            value: { taskId: "t-1", status, description: "fix the parser", ...extra },
          },
        },
      });
    await notify(TaskStatus.COMPLETED, {
      result: "all green",
      usage: { totalTokens: 1200n, toolUses: 7n, durationMs: 5300n },
    });
    await notify(TaskStatus.FAILED, { error: "  tests red  " });
    await notify(TaskStatus.FAILED, { error: "   " });
    await notify(TaskStatus.STOPPED);
    await notify(TaskStatus.COMPLETED, { summary: "  parser fixed, 3 files  " });
    await notify(TaskStatus.COMPLETED, { summary: "   " });
    const got = (await inbox(t.lead)).map((e) => e.message?.kind.value as Record<string, unknown>);
    expect(got.map((n) => n.summary)).toEqual([
      'Agent "fix the parser" completed',
      'Agent "fix the parser" failed: tests red',
      'Agent "fix the parser" failed: Unknown error',
      'Agent "fix the parser" was stopped',
      "parser fixed, 3 files",
      'Agent "fix the parser" completed',
    ]);
    expect(got[0]).toMatchObject({
      taskId: "t-1",
      status: TaskStatus.COMPLETED,
      result: "all green",
      usage: expect.objectContaining({ totalTokens: 1200n, toolUses: 7n, durationMs: 5300n }),
    });
    // Notifications open no request.
    expect((await t.lead.listRequests({})).requests).toHaveLength(0);
  });

  it("a member that stops leaves no request hanging: its pending requests are canceled and the other party told", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    // alice: a plan waiting for the lead, then approves her own shutdown.
    const plan = await alice.send({ to: "team-lead", message: planRequest("p") });
    const stop = await t.lead.send({ to: "alice", message: shutdownRequest() });
    await alice.send({ to: "team-lead", message: shutdownResponse(stop.requestId, true) });
    // bob: removed by the lead while a shutdown request to him is pending.
    const toBob = await t.lead.send({ to: "bob", message: shutdownRequest() });
    const bobsPlan = await bob.send({ to: "team-lead", message: planRequest("q") });
    await t.lead.removeMember({ name: "bob" });

    const status = async (requestId: string) =>
      (await t.lead.getRequest({ requestId })).request?.status;
    expect(await status(stop.requestId)).toBe(RequestStatus.APPROVED);
    for (const id of [plan.requestId, toBob.requestId, bobsPlan.requestId]) {
      expect(await status(id)).toBe(RequestStatus.CANCELED);
    }
    const updates = (await inbox(t.lead)).flatMap((e) =>
      e.message?.kind.case === "requestUpdate" ? [e.message.kind.value] : [],
    );
    expect(updates.map((u) => u.requestId).sort()).toEqual(
      [plan.requestId, toBob.requestId, bobsPlan.requestId].sort(),
    );
    for (const u of updates) expect(u.status).toBe(RequestStatus.CANCELED);
    // Each says which member stopped and why, whichever side of the request it was on.
    expect(Object.fromEntries(updates.map((u) => [u.requestId, u.detail]))).toEqual({
      [plan.requestId]: `request ${plan.requestId} was canceled: "alice" has shut down`,
      [toBob.requestId]: `request ${toBob.requestId} was canceled: "bob" was removed by the lead`,
      [bobsPlan.requestId]: `request ${bobsPlan.requestId} was canceled: "bob" was removed by the lead`,
    });
    // An answer to a canceled request is refused.
    const late = await refused(() =>
      t.lead.send({ to: "alice", message: planResponse(plan.requestId, true) }),
    );
    expect(late.detail?.rule).toBe("once-only");
  });
  it("the lead's open stream hears live what a member's removal did: the request it waited on canceled, then the task another held unowned", async () => {
    const t = await env().team("bob", "carol");
    const bob = t.member("bob").client;
    const plan = await bob.send({ to: "team-lead", message: planRequest("q") });
    await t.lead.send({ to: "carol", message: assign("c1") });
    const before = env().app.hub.waiting;
    const stream = openSubscription(t.lead);
    // The stream has read the lead's inbox (bob's plan) and waits: what the removals write
    // to the lead can only reach it live, before the stream's first heartbeat.
    await subscribedBeyond(env().app, before);
    // bob holds no task: the request_update alone must wake the lead's stream.
    await t.lead.removeMember({ name: "bob" });
    const update = await stream.until(
      (e) => e.event.case === "envelope" && e.event.value.message?.kind.case === "requestUpdate",
    );
    expect(update.map((e) => e.event.case)).not.toContain("heartbeat");
    expect(update.at(-1)?.event.value).toMatchObject({ from: "", requestId: plan.requestId });
    await subscribedBeyond(env().app, before);
    // carol has no pending request: the STOPPED notice alone must wake it.
    await t.lead.removeMember({ name: "carol" });
    const notice = await stream.until(
      (e) => e.event.case === "envelope" && e.event.value.message?.kind.case === "taskNotification",
    );
    stream.close();
    expect(notice.map((e) => e.event.case)).not.toContain("heartbeat");
    expect(notice.at(-1)?.event.value).toMatchObject({
      from: "",
      message: { kind: { value: { taskId: "c1", status: TaskStatus.STOPPED } } },
    });
  });
});
