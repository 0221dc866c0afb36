import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import {
  createTeamClient,
  type Protocol,
  type TeamClient,
  TeamError,
  violationOf,
} from "../../client/index.js";
import {
  MemberStatus,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, type TestEnv, uniqueName } from "../support/harness.js";

/** A team made through the client: the lead's client, and a client per teammate. */
async function team(env: TestEnv, teammates: string[], protocol: Protocol = "connect") {
  const anon = createTeamClient({ baseUrl: env.server.url, protocol });
  const created = await anon.createTeam(uniqueName("client"), { leadPermissionMode: "plan" });
  const lead = anon.withToken(created.token);
  const mates = new Map<string, TeamClient>();
  for (const name of teammates) mates.set(name, anon.withToken((await lead.addMember(name)).token));
  const mate = (name: string) => mates.get(name) as TeamClient;
  return { created, lead, mate };
}

describeEachDatabase("the client library", (env) => {
  it("membership: createTeam, addMember, members, leadName, removeMember", async () => {
    const { created, lead, mate } = await team(env(), ["alice", "bob"]);
    expect(created.token).toMatch(/^tp_/);
    expect(created.lead).toMatchObject({ name: "team-lead", permissionMode: PermissionMode.PLAN });
    expect((await lead.members()).map((m) => m.name)).toEqual(["team-lead", "alice", "bob"]);
    expect(await mate("alice").leadName()).toBe("team-lead");
    const removed = await lead.removeMember("bob");
    expect(removed).toMatchObject({ name: "bob", status: MemberStatus.STOPPED });
  });

  it("messages: sendText (idempotent with messageId), broadcast, readInbox, ack", async () => {
    const { lead, mate } = await team(env(), ["alice", "bob"]);
    const first = await lead.sendText("alice", "hello", { messageId: "k1" });
    expect(first).toMatchObject({ seq: 1n, replayed: false });
    expect(await lead.sendText("alice", "hello", { messageId: "k1" })).toMatchObject({
      seq: 1n,
      replayed: true,
    });
    const all = await lead.broadcast("all hands");
    expect(all.deliveries.map((d) => [d.to, d.seq])).toEqual([
      ["alice", 2n],
      ["bob", 1n],
    ]);
    const read = await mate("alice").readInbox({ afterSeq: 0 });
    expect(read.envelopes.map((e) => [e.seq, e.to, e.message?.kind.value])).toEqual([
      [1n, "alice", "hello"],
      [2n, "*", "all hands"],
    ]);
    expect(await mate("alice").ack(1)).toBe(1n);
    expect((await mate("alice").readInbox()).envelopes.map((e) => e.seq)).toEqual([2n]);
  });

  it("plan approval: submitPlan, rejectPlan with feedback, approvePlan with the lead's mode", async () => {
    const { lead, mate } = await team(env(), ["alice"]);
    const alice = mate("alice");
    const first = await alice.submitPlan("rm -rf src/");
    // The requester is looked up from the request: the lead need not name alice.
    await lead.rejectPlan(first.requestId, "too dangerous");
    const second = await alice.submitPlan("mv src/ trash/", { ttlMs: 60_000 });
    await lead.approvePlan(second.requestId, { feedback: "go" });
    const answers = (await alice.readInbox()).envelopes.map((e) => e.message?.kind.value);
    expect(answers).toMatchObject([
      { requestId: first.requestId, approve: false, feedback: "too dangerous" },
      { requestId: second.requestId, approve: true, permissionMode: PermissionMode.DEFAULT },
    ]);
    const plans = await lead.listRequests({ kind: "plan_approval" });
    expect(plans.requests.map((r) => r.status)).toEqual([
      RequestStatus.APPROVED,
      RequestStatus.REJECTED,
    ]);
    const rejected = await alice.listRequests({ status: "rejected" });
    expect(rejected.requests.map((r) => r.requestId)).toEqual([first.requestId]);
  });

  it("shutdown: requestShutdown, rejectShutdown with a reason, approveShutdown stops the member", async () => {
    const { lead, mate } = await team(env(), ["bob"]);
    const asked = await lead.requestShutdown("bob", { reason: "done", ttlMs: 60_000 });
    await mate("bob").rejectShutdown(asked.requestId, "still testing");
    const record = await lead.getRequest(asked.requestId);
    expect(record).toMatchObject({ kind: RequestKind.SHUTDOWN, status: RequestStatus.REJECTED });
    expect(record.response?.kind.value).toMatchObject({ reason: "still testing" });

    const again = await lead.requestShutdown("bob");
    // awaitRequest returns as soon as the answer lands, well before its timeout.
    const waited = lead.awaitRequest(again.requestId, { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 100));
    await mate("bob").approveShutdown(again.requestId);
    expect((await waited).status).toBe(RequestStatus.APPROVED);
    const bob = (await lead.members()).find((m) => m.name === "bob");
    expect(bob?.status).toBe(MemberStatus.STOPPED);
  });

  it("requests: awaitRequest times out still pending; cancelRequest withdraws; notifyTask reports", async () => {
    const { lead, mate } = await team(env(), ["carol"]);
    const carol = mate("carol");
    const plan = await carol.submitPlan("p");
    const pending = await carol.awaitRequest(plan.requestId, { timeoutMs: 200 });
    expect(pending.status).toBe(RequestStatus.PENDING);
    expect((await carol.cancelRequest(plan.requestId)).status).toBe(RequestStatus.CANCELED);

    await carol.notifyTask({
      taskId: "t-1",
      status: "failed",
      description: "fix the parser",
      error: "tests red",
      usage: { totalTokens: 10, toolUses: 2, durationMs: 30 },
    });
    const [note] = (await lead.readInbox()).envelopes.filter(
      (e) => e.message?.kind.case === "taskNotification",
    );
    expect(note?.message?.kind.value).toMatchObject({
      taskId: "t-1",
      status: TaskStatus.FAILED,
      summary: 'Agent "fix the parser" failed: tests red',
      usage: { totalTokens: 10n, toolUses: 2n, durationMs: 30n },
    });
  });

  for (const protocol of ["connect", "grpc", "grpc-web"] as const) {
    it(`errors are TeamErrors with the rule decoded [${protocol}]`, async () => {
      const { lead, mate } = await team(env(), ["alice"], protocol);
      const asked = await lead.requestShutdown("alice");
      const err = await mate("alice")
        .rejectShutdown(asked.requestId, "  ")
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(TeamError);
      expect(err).toBeInstanceOf(ConnectError);
      const e = err as TeamError;
      expect(e.code).toBe(Code.InvalidArgument);
      expect(e.codeName).toBe("invalid_argument");
      expect(e.violation).toEqual({
        rule: "reason-on-reject",
        sentence: "reason is required when rejecting a shutdown request",
        field: expect.any(String),
      });
      expect(violationOf(e)?.rule).toBe("reason-on-reject");

      // A refusal that is not a protocol rule has no violation.
      const denied = await mate("alice")
        .addMember("mallory")
        .then(
          () => undefined,
          (x: unknown) => x as TeamError,
        );
      expect(denied?.code).toBe(Code.PermissionDenied);
      expect(denied?.violation).toBeUndefined();
      // A plain ConnectError is not a TeamError (ConnectError's own check is by shape).
      expect(new ConnectError("x") instanceof TeamError).toBe(false);
    });
  }

  it("the inbox: backlog then live, in order; auto-ack after the body; break leaves the current one unacked", async () => {
    const { lead, mate } = await team(env(), ["alice"]);
    const alice = mate("alice");
    for (const t of ["a", "b", "c"]) await lead.sendText("alice", t);
    const inbox = alice.inbox();
    const seen: string[] = [];
    for await (const e of inbox) {
      seen.push(String(e.message?.kind.value));
      if (e.seq === 3n) await lead.sendText("alice", "d"); // arrives live
      if (e.seq === 4n) break;
    }
    expect(seen).toEqual(["a", "b", "c", "d"]);
    // 1..3 were acked when their bodies returned; 4 was being handled when the loop left.
    expect((await alice.readInbox()).ackedSeq).toBe(3n);
    // A new inbox resumes after the ack cursor: 4 again, nothing lost.
    for await (const e of alice.inbox()) {
      expect(e.seq).toBe(4n);
      break;
    }
  });

  it("the inbox: explicit acks with autoAck off; an abort signal ends the loop normally", async () => {
    const { lead, mate } = await team(env(), ["alice"]);
    const alice = mate("alice");
    for (const t of ["a", "b", "c"]) await lead.sendText("alice", t);
    const stop = new AbortController();
    const inbox = alice.inbox({ autoAck: false, signal: stop.signal, afterSeq: 0 });
    const seen: bigint[] = [];
    for await (const e of inbox) {
      seen.push(e.seq);
      if (e.seq === 2n) inbox.ack(e);
      if (e.seq === 3n) stop.abort();
    }
    await inbox.flush();
    expect(seen).toEqual([1n, 2n, 3n]);
    expect((await alice.readInbox()).ackedSeq).toBe(2n);
  });

  it("the inbox ends with the TeamError when the member is removed (no endless retries)", async () => {
    const { lead, mate } = await team(env(), ["alice"]);
    const alice = mate("alice");
    await lead.sendText("alice", "hi");
    const inbox = alice.inbox();
    const failure = (async () => {
      for await (const e of inbox) {
        if (e.seq === 1n) await lead.removeMember("alice");
      }
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    const err = (await failure) as TeamError;
    expect(err).toBeInstanceOf(TeamError);
    expect(err.code).toBe(Code.Unauthenticated);
    expect(inbox.connects).toBeLessThanOrEqual(2);
  });
});
