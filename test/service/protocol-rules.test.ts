import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberStatus, RequestStatus, TaskStatus } from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import {
  describeEachDatabase,
  type Protocol,
  raceTitle,
  type TeamClient,
  uniqueName,
} from "../support/harness.js";
import {
  inbox,
  kindOf,
  planRequest,
  planResponse,
  refused,
  requestRecord,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";

const task = (status: TaskStatus) => ({
  kind: { case: "taskNotification" as const, value: { taskId: "t1", status, description: "d" } },
});

/** The envelopes of a member's inbox about one request. */
async function envelopesAbout(client: TeamClient, requestId: string): Promise<Envelope[]> {
  return (await inbox(client)).filter((e) => e.requestId === requestId);
}

/** A member's status as the lead lists it. */
async function statusOf(lead: TeamClient, name: string): Promise<MemberStatus | undefined> {
  return (await lead.listMembers({})).members.find((m) => m.name === name)?.status;
}

/**
 * Every rule of the table over a live server (test/unit/rules-table.test.ts calls the table
 * directly): a refusal with its code, rule id (message prefix and detail),
 * nothing stored; next to it, the legitimate case that passes.
 */
describeEachDatabase("rules, end to end", (env, kind) => {
  /** Asserts the call is refused by `rule` with `code`, and that no inbox changed. */
  async function expectRule(
    t: Awaited<ReturnType<ReturnType<typeof env>["team"]>>,
    call: () => Promise<unknown>,
    rule: string,
    code: Code,
  ) {
    const before = await countMessages(t.name);
    const r = await refused(call);
    expect(r.code, rule).toBe(code);
    expect(r.message.startsWith(`${rule}: `), r.message).toBe(true);
    expect(r.detail?.rule).toBe(rule);
    expect(r.detail?.description.length).toBeGreaterThan(10);
    expect(await countMessages(t.name)).toBe(before);
    return r;
  }

  async function countMessages(team: string): Promise<bigint> {
    const [row] = await env().db.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM messages m JOIN teams t ON t.id = m.team_id WHERE t.name = $1",
      [team],
    );
    return row?.n ?? -1n;
  }

  it("no-broadcast: structured messages to '*' are refused; text to '*' passes", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    await expectRule(
      t,
      () => t.lead.send({ to: "*", message: shutdownRequest() }),
      "no-broadcast",
      Code.InvalidArgument,
    );
    await expectRule(
      t,
      () => alice.send({ to: "*", message: planRequest("p") }),
      "no-broadcast",
      Code.InvalidArgument,
    );
    await expectRule(
      t,
      () => alice.send({ to: "*", message: task(TaskStatus.COMPLETED) }),
      "no-broadcast",
      Code.InvalidArgument,
    );
    const sent = await alice.send({ to: "*", message: text("hi all") });
    expect(sent.deliveries.map((d) => d.to).sort()).toEqual(["bob", "team-lead"]);
    for (const reader of [t.lead, t.member("bob").client]) {
      const got = (await inbox(reader)).filter((e) => kindOf(e.message) === "text");
      expect(got.map((e) => [e.from, e.to, e.message?.kind.value])).toEqual([
        ["alice", "*", "hi all"],
      ]);
    }
  });

  it("lead-only-shutdown: a teammate cannot ask for a shutdown; the lead can", async () => {
    const t = await env().team("alice", "bob");
    await expectRule(
      t,
      () => t.member("alice").client.send({ to: "bob", message: shutdownRequest() }),
      "lead-only-shutdown",
      Code.PermissionDenied,
    );
    const asked = await t.lead.send({ to: "bob", message: shutdownRequest("wrap up") });
    expect(asked.requestId).not.toBe("");
    expect(await requestRecord(t.lead, asked.requestId)).toMatchObject({
      from: "team-lead",
      to: "bob",
      status: RequestStatus.PENDING,
    });
    const got = await envelopesAbout(t.member("bob").client, asked.requestId);
    expect(got.map((e) => [e.from, kindOf(e.message)])).toEqual([["team-lead", "shutdownRequest"]]);
  });

  it("shutdown-to-teammate: the lead cannot ask itself to shut down; it can ask a teammate", async () => {
    const t = await env().team("alice");
    await expectRule(
      t,
      () => t.lead.send({ to: "team-lead", message: shutdownRequest() }),
      "shutdown-to-teammate",
      Code.InvalidArgument,
    );
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    expect(await requestRecord(t.lead, asked.requestId)).toMatchObject({
      to: "alice",
      status: RequestStatus.PENDING,
    });
    const got = await envelopesAbout(t.member("alice").client, asked.requestId);
    expect(got.map((e) => kindOf(e.message))).toEqual(["shutdownRequest"]);
  });

  it("response-to-lead: a shutdown_response goes to the lead only", async () => {
    const t = await env().team("alice", "bob");
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    const alice = t.member("alice").client;
    await expectRule(
      t,
      () => alice.send({ to: "bob", message: shutdownResponse(asked.requestId, false, "busy") }),
      "response-to-lead",
      Code.InvalidArgument,
    );
    await alice.send({
      to: "team-lead",
      message: shutdownResponse(asked.requestId, false, "busy"),
    });
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.REJECTED);
    const got = await envelopesAbout(t.lead, asked.requestId);
    expect(got.map((e) => [e.from, e.message?.kind.value])).toEqual([
      ["alice", expect.objectContaining({ approve: false, reason: "busy" })],
    ]);
    expect(await envelopesAbout(t.member("bob").client, asked.requestId)).toEqual([]);
  });

  it("reason-on-reject: rejecting a shutdown needs a non-blank reason; approving does not", async () => {
    const t = await env().team("alice", "bob");
    const a = await t.lead.send({ to: "alice", message: shutdownRequest() });
    const alice = t.member("alice").client;
    for (const reason of ["", "   \n\t"]) {
      await expectRule(
        t,
        () =>
          alice.send({ to: "team-lead", message: shutdownResponse(a.requestId, false, reason) }),
        "reason-on-reject",
        Code.InvalidArgument,
      );
    }
    expect((await requestRecord(t.lead, a.requestId)).status).toBe(RequestStatus.PENDING);
    // A rejection with a reason passes (stored trimmed); it leaves alice working.
    await alice.send({ to: "team-lead", message: shutdownResponse(a.requestId, false, " busy ") });
    expect((await requestRecord(t.lead, a.requestId)).status).toBe(RequestStatus.REJECTED);
    expect((await envelopesAbout(t.lead, a.requestId))[0]?.message?.kind.value).toMatchObject({
      approve: false,
      reason: "busy",
    });
    expect(await statusOf(t.lead, "alice")).toBe(MemberStatus.ACTIVE);
    // An approval needs no reason.
    const b = await t.lead.send({ to: "bob", message: shutdownRequest() });
    await t
      .member("bob")
      .client.send({ to: "team-lead", message: shutdownResponse(b.requestId, true) });
    expect((await requestRecord(t.lead, b.requestId)).status).toBe(RequestStatus.APPROVED);
    expect((await envelopesAbout(t.lead, b.requestId))[0]?.message?.kind.value).toMatchObject({
      approve: true,
      reason: "",
    });
    expect(await statusOf(t.lead, "bob")).toBe(MemberStatus.STOPPED);
  });

  it("lead-only-approval: a teammate cannot answer a plan approval request", async () => {
    const t = await env().team("alice", "bob");
    const asked = await t
      .member("alice")
      .client.send({ to: "team-lead", message: planRequest("plan") });
    await expectRule(
      t,
      () =>
        t.member("bob").client.send({ to: "alice", message: planResponse(asked.requestId, true) }),
      "lead-only-approval",
      Code.PermissionDenied,
    );
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
    await t.lead.send({ to: "alice", message: planResponse(asked.requestId, true) });
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.APPROVED);
    const got = await envelopesAbout(t.member("alice").client, asked.requestId);
    expect(got.map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["team-lead", "planApprovalResponse"],
    ]);
  });

  it("plan-to-lead: plans go from a teammate to the lead", async () => {
    const t = await env().team("alice", "bob");
    await expectRule(
      t,
      () => t.member("alice").client.send({ to: "bob", message: planRequest("p") }),
      "plan-to-lead",
      Code.InvalidArgument,
    );
    await expectRule(
      t,
      () => t.lead.send({ to: "team-lead", message: planRequest("p") }),
      "plan-to-lead",
      Code.InvalidArgument,
    );
    const asked = await t
      .member("alice")
      .client.send({ to: "team-lead", message: planRequest("p") });
    expect(await requestRecord(t.lead, asked.requestId)).toMatchObject({
      from: "alice",
      to: "team-lead",
      status: RequestStatus.PENDING,
    });
    const got = await envelopesAbout(t.lead, asked.requestId);
    expect(got.map((e) => [e.from, e.message?.kind])).toEqual([
      ["alice", { case: "planApprovalRequest", value: expect.objectContaining({ plan: "p" }) }],
    ]);
  });

  it("task-to-lead: task notifications go to the lead", async () => {
    const t = await env().team("alice", "bob");
    await expectRule(
      t,
      () => t.member("alice").client.send({ to: "bob", message: task(TaskStatus.FAILED) }),
      "task-to-lead",
      Code.InvalidArgument,
    );
    await t.member("alice").client.send({ to: "team-lead", message: task(TaskStatus.FAILED) });
    const got = (await inbox(t.lead)).filter((e) => kindOf(e.message) === "taskNotification");
    expect(got.map((e) => [e.from, e.message?.kind.value])).toEqual([
      ["alice", expect.objectContaining({ taskId: "t1", status: TaskStatus.FAILED })],
    ]);
    expect(await inbox(t.member("bob").client)).toEqual([]);
  });

  it("addressee-only: only the member a request was addressed to may answer it", async () => {
    const t = await env().team("alice", "bob");
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    await expectRule(
      t,
      () =>
        t
          .member("bob")
          .client.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) }),
      "addressee-only",
      Code.PermissionDenied,
    );
    // The lead answering its own shutdown request is not the addressee either.
    await expectRule(
      t,
      () => t.lead.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) }),
      "addressee-only",
      Code.PermissionDenied,
    );
    // bob is still active and the request still pending: the refused approvals changed nothing.
    expect(await statusOf(t.lead, "bob")).toBe(MemberStatus.ACTIVE);
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
    // The addressee may answer.
    await t
      .member("alice")
      .client.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) });
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.APPROVED);
    const got = await envelopesAbout(t.lead, asked.requestId);
    expect(got.map((e) => [e.from, kindOf(e.message)])).toEqual([["alice", "shutdownResponse"]]);
    expect(await statusOf(t.lead, "alice")).toBe(MemberStatus.STOPPED);
  });

  it("unknown-request: an answer naming no request of this team, or one of another kind", async () => {
    const t = await env().team("alice");
    const other = await env().team("alice");
    const foreign = await other.lead.send({ to: "alice", message: shutdownRequest() });
    const alice = t.member("alice").client;
    for (const id of ["req_AAAAAAAAAAAAAAAAAAAAAA", foreign.requestId]) {
      await expectRule(
        t,
        () => alice.send({ to: "team-lead", message: shutdownResponse(id, true) }),
        "unknown-request",
        Code.NotFound,
      );
    }
    const plan = await alice.send({ to: "team-lead", message: planRequest("p") });
    await expectRule(
      t,
      () => alice.send({ to: "team-lead", message: shutdownResponse(plan.requestId, true) }),
      "unknown-request",
      Code.NotFound,
    );
    // The other team's request is untouched; an answer naming this team's request passes.
    expect((await requestRecord(other.lead, foreign.requestId)).status).toBe(RequestStatus.PENDING);
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    await alice.send({ to: "team-lead", message: shutdownResponse(asked.requestId, false, "no") });
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.REJECTED);
    const got = await envelopesAbout(t.lead, asked.requestId);
    expect(got.map((e) => kindOf(e.message))).toEqual(["shutdownResponse"]);
  });

  it("once-only: a second answer is refused, naming the current status", async () => {
    const t = await env().team("alice");
    const asked = await t
      .member("alice")
      .client.send({ to: "team-lead", message: planRequest("p") });
    // The first answer passes.
    await t.lead.send({ to: "alice", message: planResponse(asked.requestId, false, "no") });
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.REJECTED);
    const r = await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: planResponse(asked.requestId, true) }),
      "once-only",
      Code.FailedPrecondition,
    );
    expect(r.message).toMatch(/already rejected/);
    const record = await requestRecord(t.lead, asked.requestId);
    expect(record.status).toBe(RequestStatus.REJECTED);
    expect(record.response?.kind.value).toMatchObject({ approve: false, feedback: "no" });
    const got = await envelopesAbout(t.member("alice").client, asked.requestId);
    expect(got.map((e) => e.message?.kind.value)).toEqual([
      expect.objectContaining({ approve: false, feedback: "no" }),
    ]);
  });

  it("known-recipient: messages to a member that does not exist or is stopped; an active one receives them", async () => {
    const t = await env().team("alice", "bob");
    await t.lead.removeMember({ name: "alice" });
    for (const to of ["nobody", "alice"]) {
      for (const message of [shutdownRequest(), text("hello")]) {
        await expectRule(t, () => t.lead.send({ to, message }), "known-recipient", Code.NotFound);
      }
    }
    const asked = await t.lead.send({ to: "bob", message: shutdownRequest() });
    const said = await t.lead.send({ to: "bob", message: text("hello") });
    expect(said.deliveries.map((d) => d.to)).toEqual(["bob"]);
    expect((await requestRecord(t.lead, asked.requestId)).to).toBe("bob");
    const got = await inbox(t.member("bob").client);
    expect(got.map((e) => [e.seq, e.requestId, kindOf(e.message)])).toEqual([
      [asked.seq, asked.requestId, "shutdownRequest"],
      [said.seq, "", "text"],
    ]);
  });

  it("response-to-requester: a plan answer goes to the teammate who asked", async () => {
    const t = await env().team("alice", "bob");
    const asked = await t
      .member("alice")
      .client.send({ to: "team-lead", message: planRequest("p") });
    await expectRule(
      t,
      () => t.lead.send({ to: "bob", message: planResponse(asked.requestId, true) }),
      "response-to-requester",
      Code.InvalidArgument,
    );
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
    await t.lead.send({ to: "alice", message: planResponse(asked.requestId, true) });
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.APPROVED);
    const got = await envelopesAbout(t.member("alice").client, asked.requestId);
    expect(got.map((e) => kindOf(e.message))).toEqual(["planApprovalResponse"]);
    expect(await inbox(t.member("bob").client)).toEqual([]);
  });

  it("size-shape: request ids, plan size, task status and ttl bounds", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const cases: [() => Promise<unknown>, string][] = [
      [
        () => alice.send({ to: "team-lead", message: shutdownResponse("", true) }),
        "message.shutdown_response.request_id",
      ],
      [
        () => alice.send({ to: "team-lead", message: shutdownResponse("req_short", true) }),
        "message.shutdown_response.request_id",
      ],
      [
        () => alice.send({ to: "team-lead", message: planRequest(" ") }),
        "message.plan_approval_request.plan",
      ],
      [
        () => alice.send({ to: "team-lead", message: planRequest("p".repeat(256 * 1024 + 1)) }),
        "message.plan_approval_request.plan",
      ],
      [
        () => alice.send({ to: "team-lead", message: task(TaskStatus.UNSPECIFIED) }),
        "message.task_notification.status",
      ],
      [
        () => alice.send({ to: "team-lead", message: task(99 as TaskStatus) }),
        "message.task_notification.status",
      ],
      [
        () =>
          t.lead.send({
            to: "alice",
            message: shutdownRequest(),
            ttl: { seconds: 0n, nanos: 5_000_000 },
          }),
        "ttl",
      ],
      [
        () =>
          t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: 8n * 86_400n } }),
        "ttl",
      ],
      [() => t.lead.send({ to: "alice", message: text("hi"), ttl: { seconds: 10n } }), "ttl"],
    ];
    for (const [call, field] of cases) {
      const r = await expectRule(t, call, "size-shape", Code.InvalidArgument);
      expect(r.detail?.field).toBe(field);
    }
    // At the limits: a plan of exactly 256 KiB, a ttl of exactly 1 s.
    const plan = await alice.send({
      to: "team-lead",
      message: planRequest("p".repeat(256 * 1024)),
    });
    const stored = (await requestRecord(t.lead, plan.requestId)).request?.kind.value;
    expect((stored as { plan: string } | undefined)?.plan.length).toBe(256 * 1024);
    const asked = await t.lead.send({
      to: "alice",
      message: shutdownRequest(),
      ttl: { seconds: 1n },
    });
    expect((await envelopesAbout(alice, asked.requestId)).map((e) => kindOf(e.message))).toEqual([
      "shutdownRequest",
    ]);
  });

  // Names, sizes and shapes of every RPC, not only of protocol messages (size-shape), and
  // values PostgreSQL cannot hold (NUL, seqs past bigint), which must be refused as
  // InvalidArgument before they reach the database and come back as Internal.
  it("refuses badly shaped team, lead and member names, naming the field", async () => {
    const anon = env().client();
    const cases: [() => Promise<unknown>, string][] = [
      [() => anon.createTeam({ team: "" }), "team"],
      [() => anon.createTeam({ team: "Upper" }), "team"],
      [() => anon.createTeam({ team: "-leading-dash" }), "team"],
      [() => anon.createTeam({ team: "a".repeat(65) }), "team"],
      [() => anon.createTeam({ team: uniqueName("t"), leadName: "has space" }), "lead_name"],
    ];
    const t = await env().team();
    cases.push([() => t.lead.addMember({ name: "Alice" }), "name"]);
    cases.push([() => t.lead.addMember({ name: "a/b" }), "name"]);
    cases.push([() => t.lead.removeMember({ name: "" }), "name"]);
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.message).toMatch(/^size-shape: /);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
  });

  it("accepts names at the limits of the shape", async () => {
    const name = `${"z".repeat(54)}.${"0".repeat(4)}_-x`.slice(0, 64);
    const created = await env().client().createTeam({ team: name, leadName: "l.e_a-d9" });
    expect(created.lead?.name).toBe("l.e_a-d9");
    const lead = env().client(created.token);
    expect((await lead.addMember({ name: "9" })).member?.name).toBe("9");
  });

  it("refuses a send without a message, with empty text, or with text over 64 KiB; accepts exactly 64 KiB", async () => {
    const t = await env().team("alice");
    const cases: [() => Promise<unknown>, string][] = [
      [() => t.lead.send({ to: "alice" }), "message"],
      [() => t.lead.send({ to: "alice", message: {} }), "message"],
      [() => t.lead.send({ to: "alice", message: text("   ") }), "message.text"],
      [
        () => t.lead.send({ to: "alice", message: text("é".repeat(32 * 1024 + 1)) }),
        "message.text",
      ],
      [() => t.lead.send({ to: "", message: text("hi") }), "to"],
      [
        () => t.lead.send({ to: "alice", message: text("hi"), messageId: "k".repeat(129) }),
        "message_id",
      ],
    ];
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
    const ok = await t.lead.send({
      to: "alice",
      message: text("é".repeat(32 * 1024)),
      messageId: "k".repeat(128),
    });
    expect(ok.seq).toBe(1n);
    // Nothing refused was stored.
    expect((await t.member("alice").client.readInbox({})).envelopes).toHaveLength(1);
  });

  it("refuses enum values outside their enum and a negative await timeout, naming the field", async () => {
    const t = await env().team("alice");
    const cases: [() => Promise<unknown>, string][] = [
      [
        () =>
          env()
            .client()
            .createTeam({ team: uniqueName("t"), leadPermissionMode: 99 as never }),
        "lead_permission_mode",
      ],
      [() => t.lead.addMember({ name: "bob", permissionMode: 99 as never }), "permission_mode"],
      [() => t.lead.listRequests({ status: 99 as never }), "status"],
      [() => t.lead.listRequests({ kind: 99 as never }), "kind"],
      [() => t.lead.listAttempts({ outcome: 99 as never }), "outcome"],
      [
        () =>
          t.lead.awaitRequest({
            requestId: "req_AAAAAAAAAAAAAAAAAAAAAA",
            timeout: { seconds: -1n, nanos: 0 },
          }),
        "timeout",
      ],
    ];
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
    // Nothing was stored by the refused AddMember.
    const members = await t.lead.listMembers({});
    expect(members.members.map((m) => m.name).sort()).toEqual(["alice", "team-lead"]);
  });

  it("refuses a request_update from a client (server-only)", async () => {
    const t = await env().team("alice");
    const r = await refused(() =>
      t.lead.send({
        to: "alice",
        message: { kind: { case: "requestUpdate", value: { requestId: "req_x" } } },
      }),
    );
    expect(r.code).toBe(Code.InvalidArgument);
    expect(r.detail?.rule).toBe("server-only");
  });

  it("refuses a body larger than the server's read limit without falling over", async () => {
    const t = await env().team("alice");
    const r = await refused(() =>
      t.lead.send({ to: "alice", message: text("x".repeat(2 * 1024 * 1024)) }),
    );
    expect(r.code).toBe(Code.ResourceExhausted);
    expect((await t.lead.send({ to: "alice", message: text("still up") })).seq).toBe(1n);
  });

  it("refuses a message_id with control characters and seqs beyond bigint, without Internal", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const huge = 2n ** 63n;
    const cases: [() => Promise<unknown>, string][] = [
      [() => t.lead.send({ to: "alice", message: text("x"), messageId: "a\u0000b" }), "message_id"],
      [
        () => t.lead.send({ to: "alice", message: text("x"), messageId: "tab\there" }),
        "message_id",
      ],
      [() => alice.ack({ seq: huge }), "seq"],
      [() => alice.readInbox({ afterSeq: huge }), "after_seq"],
      // Found by the fuzzer: a NUL in a filter reached the database as Internal.
      [() => t.lead.listAttempts({ member: "\u0000" }), "member"],
      [() => t.lead.listAttempts({ requestId: "req_\u0000" }), "request_id"],
      [() => t.lead.listRequests({ party: "a\u0000" }), "party"],
      [
        async () => {
          for await (const _ of alice.subscribe({ afterSeq: huge })) break;
        },
        "after_seq",
      ],
    ];
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
    expect((await alice.readInbox({})).envelopes).toHaveLength(0);
  });

  it(
    raceTitle(
      kind,
      "50 concurrent answers to one request: exactly one wins, the record and the inbox agree, 49 get once-only",
    ),
    async () => {
      const t = await env().team("alice");
      const asked = await t
        .member("alice")
        .client.send({ to: "team-lead", message: planRequest("race me") });
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          t.lead
            .send({
              to: "alice",
              message: planResponse(asked.requestId, i % 2 === 0, `answer ${i}`),
            })
            .then(
              () => ({ ok: true as const, i }),
              async (e) => ({ ok: false as const, i, r: await refused(() => Promise.reject(e)) }),
            ),
        ),
      );
      const winners = results.filter((r) => r.ok);
      expect(winners).toHaveLength(1);
      const losers = results.flatMap((r) => (r.ok ? [] : [r.r]));
      expect(losers).toHaveLength(49);
      for (const l of losers) {
        expect(l.code).toBe(Code.FailedPrecondition);
        expect(l.detail?.rule).toBe("once-only");
      }
      const winner = winners[0]?.i ?? -1;
      const approved = winner % 2 === 0;
      const record = (await t.lead.getRequest({ requestId: asked.requestId })).request;
      expect(record?.status).toBe(approved ? RequestStatus.APPROVED : RequestStatus.REJECTED);
      expect(record?.response?.kind.value).toMatchObject({
        approve: approved,
        feedback: `answer ${winner}`,
      });
      const delivered = (await inbox(t.member("alice").client)).filter(
        (e) => e.requestId === asked.requestId,
      );
      expect(delivered).toHaveLength(1);
      expect(delivered[0]?.message?.kind.value).toMatchObject({
        approve: approved,
        feedback: `answer ${winner}`,
      });
      for (const l of losers)
        expect(l.message).toMatch(approved ? /already approved/ : /already rejected/);
    },
  );

  it("server-only: a client cannot send a request_update; the server's own reaches the addressee", async () => {
    const t = await env().team("alice");
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    await expectRule(
      t,
      () =>
        t.lead.send({
          to: "alice",
          message: {
            kind: {
              case: "requestUpdate",
              value: { requestId: asked.requestId, status: RequestStatus.CANCELED },
            },
          },
        }),
      "server-only",
      Code.InvalidArgument,
    );
    expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
    // The legitimate way: CancelRequest, after which the server writes the update itself.
    await t.lead.cancelRequest({ requestId: asked.requestId });
    const got = await envelopesAbout(t.member("alice").client, asked.requestId);
    expect(got.map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["team-lead", "shutdownRequest"],
      ["", "requestUpdate"],
    ]);
    expect(got[1]?.message?.kind.value).toMatchObject({
      requestId: asked.requestId,
      status: RequestStatus.CANCELED,
    });
  });

  /**
   * The teammate answers one shutdown_request 50 times at once, over several connections and
   * transports, approvals and rejections (with reasons) mixed. Exactly one answer wins. A
   * loser either found the request decided (once-only, FailedPrecondition, naming the
   * winner's status) or, when an approval won, found its token revoked: the sender check at
   * the start of the send (store/send.ts requireActiveSender, or the auth interceptor) refuses
   * a stopped member with Unauthenticated before the request is looked at.
   */
  for (const approveFirst of [true, false]) {
    it(
      raceTitle(
        kind,
        `50 concurrent shutdown answers (${approveFirst ? "approval" : "rejection"} first): one wins; record, member status and the lead's inbox agree`,
      ),
      async () => {
        const t = await env().team("alice");
        const asked = await t.lead.send({ to: "alice", message: shutdownRequest("race") });
        const { token } = t.member("alice");
        const transports: Protocol[] = ["connect", "grpc", "grpc-web", "connect-h1", "connect"];
        // One client per transport: each its own connection to the server.
        const clients = transports.map((p) => env().client(token, p));
        const approves = (i: number) => (i % 2 === 0) === approveFirst;
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            (clients[i % clients.length] as TeamClient)
              .send({
                to: "team-lead",
                message: shutdownResponse(asked.requestId, approves(i), `answer ${i}`),
              })
              .then(
                () => ({ ok: true as const, i }),
                async (e) => ({ ok: false as const, i, r: await refused(() => Promise.reject(e)) }),
              ),
          ),
        );
        const winners = results.filter((r) => r.ok);
        expect(winners).toHaveLength(1);
        const winner = winners[0]?.i ?? -1;
        const approved = approves(winner);
        const losers = results.flatMap((r) => (r.ok ? [] : [r.r]));
        expect(losers).toHaveLength(49);
        for (const l of losers) {
          if (l.code === Code.Unauthenticated) {
            // Only a winning approval stops alice.
            expect(approved, l.message).toBe(true);
            expect(l.message).toMatch(/token revoked: member "alice".* is stopped/);
            expect(l.detail).toBeUndefined();
          } else {
            expect(l.code, l.message).toBe(Code.FailedPrecondition);
            expect(l.detail?.rule).toBe("once-only");
            expect(l.message).toMatch(approved ? /already approved/ : /already rejected/);
          }
        }

        const record = await requestRecord(t.lead, asked.requestId);
        expect(record.status).toBe(approved ? RequestStatus.APPROVED : RequestStatus.REJECTED);
        expect(record.response?.kind).toEqual({
          case: "shutdownResponse",
          value: expect.objectContaining({ approve: approved, reason: `answer ${winner}` }),
        });
        expect(await statusOf(t.lead, "alice")).toBe(
          approved ? MemberStatus.STOPPED : MemberStatus.ACTIVE,
        );
        const responses = (await inbox(t.lead)).filter(
          (e) => kindOf(e.message) === "shutdownResponse",
        );
        expect(responses.map((e) => [e.from, e.requestId, e.message?.kind.value])).toEqual([
          [
            "alice",
            asked.requestId,
            expect.objectContaining({ approve: approved, reason: `answer ${winner}` }),
          ],
        ]);
        // The token works afterwards iff the teammate is still working.
        const after = clients[0] as TeamClient;
        if (approved) {
          expect(
            (await refused(() => after.send({ to: "team-lead", message: text("hi") }))).code,
          ).toBe(Code.Unauthenticated);
        } else {
          await after.send({ to: "team-lead", message: text("still here") });
          expect((await inbox(t.lead)).map((e) => kindOf(e.message))).toContain("text");
        }
      },
    );
  }

  it("a retried answer with the same message_id is a no-op, not a once-only refusal", async () => {
    const t = await env().team("alice");
    const asked = await t.lead.send({ to: "alice", message: shutdownRequest() });
    const alice = t.member("alice").client;
    const answer = {
      to: "team-lead",
      message: shutdownResponse(asked.requestId, false, "busy"),
      messageId: "ans-1",
    };
    const first = await alice.send(answer);
    const retry = await alice.send(answer);
    expect(retry).toMatchObject({ replayed: true, seq: first.seq, requestId: asked.requestId });
    expect((await inbox(t.lead)).filter((e) => e.requestId === asked.requestId)).toHaveLength(1);
  });
});
