import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { RequestStatus, TaskStatus } from "../gen/team/v1/enums_pb.js";
import { describeEachDatabase } from "./support/harness.js";
import {
  inbox,
  planRequest,
  planResponse,
  refused,
  shutdownRequest,
  shutdownResponse,
  text,
} from "./support/protocol-helpers.js";

const task = (status: TaskStatus) => ({
  kind: { case: "taskNotification" as const, value: { taskId: "t1", status, description: "d" } },
});

/**
 * Every rule of the table: a refusal with its code, rule id (message prefix and detail),
 * nothing stored; next to it, the legitimate case that passes.
 */
describeEachDatabase("protocol rules", (env) => {
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
    expect((await alice.send({ to: "*", message: text("hi all") })).deliveries).toHaveLength(2);
  });

  it("lead-only-shutdown: a teammate cannot ask for a shutdown; the lead can", async () => {
    const t = await env().team("alice", "bob");
    await expectRule(
      t,
      () => t.member("alice").client.send({ to: "bob", message: shutdownRequest() }),
      "lead-only-shutdown",
      Code.PermissionDenied,
    );
    expect((await t.lead.send({ to: "bob", message: shutdownRequest() })).requestId).not.toBe("");
  });

  it("shutdown-to-teammate: the lead cannot ask itself to shut down", async () => {
    const t = await env().team("alice");
    await expectRule(
      t,
      () => t.lead.send({ to: "team-lead", message: shutdownRequest() }),
      "shutdown-to-teammate",
      Code.InvalidArgument,
    );
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
    const b = await t.lead.send({ to: "bob", message: shutdownRequest() });
    await t
      .member("bob")
      .client.send({ to: "team-lead", message: shutdownResponse(b.requestId, true) });
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
    await t.lead.send({ to: "alice", message: planResponse(asked.requestId, true) });
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
    await t.member("alice").client.send({ to: "team-lead", message: planRequest("p") });
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
    // bob is still active: the refused approval changed nothing.
    expect((await t.member("bob").client.listMembers({})).members).toHaveLength(3);
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
  });

  it("once-only: a second answer is refused, naming the current status", async () => {
    const t = await env().team("alice");
    const asked = await t
      .member("alice")
      .client.send({ to: "team-lead", message: planRequest("p") });
    await t.lead.send({ to: "alice", message: planResponse(asked.requestId, false, "no") });
    const r = await expectRule(
      t,
      () => t.lead.send({ to: "alice", message: planResponse(asked.requestId, true) }),
      "once-only",
      Code.FailedPrecondition,
    );
    expect(r.message).toMatch(/already rejected/);
  });

  it("known-recipient: protocol messages to a member that does not exist or is stopped", async () => {
    const t = await env().team("alice");
    await t.lead.removeMember({ name: "alice" });
    for (const to of ["nobody", "alice"]) {
      await expectRule(
        t,
        () => t.lead.send({ to, message: shutdownRequest() }),
        "known-recipient",
        Code.NotFound,
      );
    }
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
    await alice.send({ to: "team-lead", message: planRequest("p".repeat(256 * 1024)) });
    await t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: 1n } });
  });

  it("50 concurrent answers to one request: exactly one wins, the record and the inbox agree, 49 get once-only", async () => {
    const t = await env().team("alice");
    const asked = await t
      .member("alice")
      .client.send({ to: "team-lead", message: planRequest("race me") });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        t.lead
          .send({ to: "alice", message: planResponse(asked.requestId, i % 2 === 0, `answer ${i}`) })
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
  });

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
