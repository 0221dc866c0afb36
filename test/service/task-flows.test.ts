import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  MemberStatus,
  RequestKind,
  RequestStatus,
  TaskProgress,
  TaskState,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import { databaseKinds, openTestDatabase } from "../support/databases.js";
import {
  describeEachDatabase,
  raceTitle,
  startTestEnv,
  type TeamClient,
} from "../support/harness.js";
import {
  inbox,
  kindOf,
  refused,
  requestRecord,
  shutdownRequest,
  shutdownResponse,
  updatesAbout,
} from "../support/protocol-helpers.js";
import { awaitingBeyond, subscribedBeyond } from "../support/subscribed.js";
import { openSubscription } from "../support/subscription-reader.js";
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

/** The task notifications the server wrote (from "") in a member's inbox. */
async function serverTaskNotices(client: TeamClient) {
  return (await inbox(client)).flatMap((e) =>
    e.from === "" && e.message?.kind.case === "taskNotification" ? [e.message.kind.value] : [],
  );
}

/** The outcome of a call that may be refused: "ok", or the refusal's rule id. */
const outcome = (call: Promise<unknown>) =>
  call.then(
    () => "ok",
    (e) => {
      const err = ConnectError.from(e);
      return err.code === Code.FailedPrecondition || err.code === Code.PermissionDenied
        ? (err.rawMessage.split(":")[0] ?? "?")
        : `unexpected ${Code[err.code]}: ${err.rawMessage}`;
    },
  );

describeEachDatabase("task protocols: flows", (env, kind) => {
  it("claim, approve, hand off, accept, sign off: the task is done, its history in order, every party told", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const claim = await claimAndApprove(t.lead, alice, "alice", "t1");
    const h = await alice.send({ to: "bob", message: handoffRequest("t1", "parser done") });
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    const s = await bob.send({ to: "team-lead", message: signoffRequest("t1", "the diff") });
    await t.lead.send({ to: "bob", message: signoffResponse(s.requestId, true, "thanks") });

    const task = await taskOf(bob, "t1");
    expect(task).toMatchObject({ taskId: "t1", team: t.name, state: TaskState.DONE, owner: "bob" });
    expect(task.history.map((r) => [r.requestId, r.kind, r.from, r.to, r.status])).toEqual([
      [claim, RequestKind.TASK_CLAIM, "alice", "team-lead", RequestStatus.APPROVED],
      [h.requestId, RequestKind.TASK_HANDOFF, "alice", "bob", RequestStatus.APPROVED],
      [s.requestId, RequestKind.RESULT_SIGNOFF, "bob", "team-lead", RequestStatus.APPROVED],
    ]);
    // A done task stays with the one whose result it was, on the list every member shares.
    expect((await alice.listTasks({ owner: "bob" })).tasks.map((k) => k.taskId)).toEqual(["t1"]);
    expect((await bob.listTasks({ state: TaskState.DONE })).tasks.map((k) => k.taskId)).toEqual([
      "t1",
    ]);
    expect((await taskOf(alice, "t1")).status).toBe(TaskProgress.COMPLETED);
    // Each step reached its addressee's inbox.
    expect((await inbox(alice)).map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["team-lead", "taskClaimResponse"],
      ["bob", "taskHandoffResponse"],
    ]);
    expect((await inbox(bob)).map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["alice", "taskHandoffRequest"],
      ["team-lead", "resultSignoffResponse"],
    ]);
    expect((await inbox(t.lead)).map((e) => [e.from, kindOf(e.message)])).toEqual([
      ["alice", "taskClaimRequest"],
      ["bob", "resultSignoffRequest"],
    ]);
    // The journal has every step, accepted.
    const steps = (await t.lead.listAttempts({})).attempts.map((a) => [a.member, a.action]);
    expect(steps.reverse()).toEqual([
      ["alice", "task_claim_request"],
      ["team-lead", "task_claim_response"],
      ["alice", "task_handoff_request"],
      ["bob", "task_handoff_response"],
      ["bob", "result_signoff_request"],
      ["team-lead", "result_signoff_response"],
    ]);
  });

  it("an accepted handoff cancels the owner's pending sign-off; the lead's late approval is refused", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t1") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    expect((await requestRecord(t.lead, s.requestId)).status).toBe(RequestStatus.CANCELED);
    const late = await refused(() =>
      t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) }),
    );
    expect([late.code, late.detail?.rule]).toEqual([Code.FailedPrecondition, "once-only"]);
    expect(late.message).toContain("canceled");
    expect(await taskOf(bob, "t1")).toMatchObject({ state: TaskState.CLAIMED, owner: "bob" });
    // Both parties of the canceled sign-off were told why (bob, who made the change, is no party).
    for (const party of [alice, t.lead]) {
      const [update] = await updatesAbout(party, s.requestId);
      expect(update?.message?.kind.value).toMatchObject({
        kind: RequestKind.RESULT_SIGNOFF,
        status: RequestStatus.CANCELED,
        detail: expect.stringContaining('handed off to "bob"'),
      });
    }
  });

  it("an approved sign-off cancels a pending handoff; the addressee's late acceptance is refused", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t1") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    await t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
    const late = await refused(() =>
      bob.send({ to: "alice", message: handoffResponse(h.requestId, true) }),
    );
    expect([late.code, late.detail?.rule]).toEqual([Code.FailedPrecondition, "once-only"]);
    expect(await taskOf(alice, "t1")).toMatchObject({ state: TaskState.DONE, owner: "alice" });
    // Both parties of the canceled handoff are told why: the task is done.
    for (const party of [alice, bob]) {
      const updates = await updatesAbout(party, h.requestId);
      expect(updates.map((u) => u.message?.kind.value)).toEqual([
        expect.objectContaining({
          kind: RequestKind.TASK_HANDOFF,
          status: RequestStatus.CANCELED,
          detail: `request ${h.requestId} was canceled by the server: the result of task "t1" was signed off: the task is done`,
        }),
      ]);
    }
    expect((await requestRecord(bob, h.requestId)).status).toBe(RequestStatus.CANCELED);
  });

  it("a handoff canceled by the sign-off's approval: the addressee's open stream hears it live, and the owner awaiting it gets CANCELED at once", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t1") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    // bob's stream has read its inbox (the handoff request) and waits; alice waits on her
    // handoff: the cancellation the approval makes can only reach either of them by a wake-up.
    const subscribed = env().app.hub.waiting;
    const stream = openSubscription(bob);
    await subscribedBeyond(env().app, subscribed);
    const awaited = env().app.waiters.size;
    const waiting = alice.awaitRequest({ requestId: h.requestId });
    await awaitingBeyond(env().app, awaited);
    await t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
    const read = await stream.until(
      (e) => e.event.case === "envelope" && e.event.value.message?.kind.case === "requestUpdate",
    );
    stream.close();
    expect(read.map((e) => e.event.case)).not.toContain("heartbeat");
    expect(read.at(-1)?.event.value).toMatchObject({ from: "", requestId: h.requestId });
    // Not the await's 60 s default (which would return the pending record): the cancel woke it.
    expect((await waiting).request?.status).toBe(RequestStatus.CANCELED);
  });

  it("a task given back to the lead cancels the owner's pending sign-off; the owner is told why, the lead (who accepted) is not", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    await t.lead.send({ to: "alice", message: assign("t1") });
    const s = await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    const h = await alice.send({ to: "team-lead", message: handoffRequest("t1", "over to you") });
    await t.lead.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    expect(await taskOf(t.lead, "t1")).toMatchObject({
      state: TaskState.UNOWNED,
      owner: "",
      status: TaskProgress.PENDING,
    });
    expect((await requestRecord(t.lead, s.requestId)).status).toBe(RequestStatus.CANCELED);
    const [update, ...more] = await updatesAbout(alice, s.requestId);
    expect(more).toEqual([]);
    expect(update?.message?.kind.value).toMatchObject({
      kind: RequestKind.RESULT_SIGNOFF,
      status: RequestStatus.CANCELED,
      detail: `request ${s.requestId} was canceled by the server: task "t1" was given back to the lead and is unowned`,
    });
    expect(await updatesAbout(t.lead, s.requestId)).toEqual([]);
  });

  it(
    raceTitle(kind, "20 teammates claim one task at once: exactly one claim is pending, one owner"),
    async () => {
      const names = Array.from({ length: 20 }, (_, i) => `m${i}`);
      const t = await env().team(...names);
      // The task is recorded already (a first claim was rejected): the claims meet on its row
      // lock, not on the insert that records it.
      const first = await t
        .member("m0")
        .client.send({ to: "team-lead", message: claimRequest("hot") });
      await t.lead.send({ to: "m0", message: claimResponse(first.requestId, false, "wait") });
      const outcomes = await Promise.all(
        names.map((n) =>
          t
            .member(n)
            .client.send({ to: "team-lead", message: claimRequest("hot") })
            .then((r) => ({ n, id: r.requestId, rule: "ok" }))
            .catch((e) => ({ n, id: "", rule: ConnectError.from(e).rawMessage.split(":")[0] })),
        ),
      );
      const won = outcomes.filter((o) => o.rule === "ok");
      expect(won).toHaveLength(1);
      expect(outcomes.filter((o) => o.rule === "one-owner")).toHaveLength(19);
      const [winner] = won;
      if (!winner) throw new Error("no winner");
      // The lead approves once; an assignment racing it is refused, whichever commits first.
      const [approved, assigned] = await Promise.all([
        outcome(t.lead.send({ to: winner.n, message: claimResponse(winner.id, true) })),
        outcome(
          t.lead.send({ to: names.find((n) => n !== winner.n) ?? "", message: assign("hot") }),
        ),
      ]);
      expect(approved).toBe("ok");
      expect(assigned).toBe("one-owner");
      expect(await taskOf(t.lead, "hot")).toMatchObject({
        state: TaskState.CLAIMED,
        owner: winner.n,
      });
      const [row] = await env().db.query<{ n: bigint }>(
        `SELECT count(*) AS n FROM tasks k JOIN teams t ON t.id = k.team_id
       WHERE t.name = $1 AND k.task_id = 'hot'`,
        [t.name],
      );
      expect(row?.n).toBe(1n);
    },
  );

  it(
    raceTitle(
      kind,
      "a handoff's acceptance racing the result's sign-off: exactly one takes effect, 10 rounds",
    ),
    async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      const seen = new Set<string>();
      for (let round = 0; round < 10; round++) {
        const id = `t${round}`;
        await t.lead.send({ to: "alice", message: assign(id) });
        const h = await alice.send({ to: "bob", message: handoffRequest(id) });
        const s = await alice.send({ to: "team-lead", message: signoffRequest(id) });
        const [accepted, signed] = await Promise.all([
          outcome(bob.send({ to: "alice", message: handoffResponse(h.requestId, true) })),
          outcome(t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) })),
        ]);
        const task = await taskOf(t.lead, id);
        const statuses = [
          (await requestRecord(t.lead, h.requestId)).status,
          (await requestRecord(t.lead, s.requestId)).status,
        ];
        if (accepted === "ok") {
          expect(signed).toBe("once-only");
          expect(task).toMatchObject({ state: TaskState.CLAIMED, owner: "bob" });
          expect(statuses).toEqual([RequestStatus.APPROVED, RequestStatus.CANCELED]);
          seen.add("handoff");
        } else {
          expect([accepted, signed]).toEqual(["once-only", "ok"]);
          expect(task).toMatchObject({ state: TaskState.DONE, owner: "alice" });
          expect(statuses).toEqual([RequestStatus.CANCELED, RequestStatus.APPROVED]);
          seen.add("signoff");
        }
      }
      expect(seen.size).toBeGreaterThan(0);
    },
  );

  it("an approved shutdown gives the teammate's tasks back: unowned, its pending requests canceled, the lead told once per task", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "alice", message: assign("a1") });
    await t.lead.send({ to: "alice", message: assign("a2") });
    await t.lead.send({ to: "bob", message: assign("b1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("a1") });
    const stop = await t.lead.send({ to: "alice", message: shutdownRequest("done") });
    await alice.send({ to: "team-lead", message: shutdownResponse(stop.requestId, true) });

    for (const id of ["a1", "a2"]) {
      expect(await taskOf(t.lead, id)).toMatchObject({ state: TaskState.UNOWNED, owner: "" });
    }
    expect((await taskOf(t.lead, "b1")).owner).toBe("bob");
    expect((await requestRecord(t.lead, h.requestId)).status).toBe(RequestStatus.CANCELED);
    expect((await updatesAbout(bob, h.requestId)).length).toBe(1);
    const notices = await serverTaskNotices(t.lead);
    expect(notices.map((n) => [n?.taskId, n?.status])).toEqual([
      ["a1", TaskStatus.STOPPED],
      ["a2", TaskStatus.STOPPED],
    ]);
    expect(notices[0]?.summary).toContain('"alice" has shut down');
    // The task is free: bob may claim it now.
    await claimAndApprove(t.lead, bob, "bob", "a1");
    expect((await taskOf(bob, "a1")).owner).toBe("bob");
  });

  it("RemoveMember gives the member's tasks back and tells the lead; a claim it had pending is canceled", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    await t.lead.send({ to: "alice", message: assign("a1") });
    const c = await alice.send({ to: "team-lead", message: claimRequest("a2") });
    await t.lead.removeMember({ name: "alice" });
    expect(await taskOf(t.lead, "a1")).toMatchObject({ state: TaskState.UNOWNED });
    expect((await requestRecord(t.lead, c.requestId)).status).toBe(RequestStatus.CANCELED);
    const notices = await serverTaskNotices(t.lead);
    expect(notices.map((n) => [n?.taskId, n?.status, n?.summary])).toEqual([
      [
        "a1",
        TaskStatus.STOPPED,
        'Agent "alice" was removed by the lead: task "a1" is unowned again',
      ],
    ]);
    // Stored as a task_notification: a search of the lead's history by that kind finds it.
    const found = await t.lead.searchMessages({ query: "unowned", kind: "task_notification" });
    expect(found.hits.map((h) => h.envelope?.message?.kind.case)).toEqual(["taskNotification"]);
    // The canceled claim no longer blocks the task.
    await t.lead.send({ to: "bob", message: assign("a2") });
    expect((await taskOf(t.lead, "a2")).owner).toBe("bob");
    expect((await t.lead.listMembers({})).members.find((m) => m.name === "alice")?.status).toBe(
      MemberStatus.STOPPED,
    );
  });
});

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`tasks survive a server restart [${kind}]`, () => {
    it("owners, states and histories outlive the app; a pending handoff is accepted after the restart", async () => {
      const testDb = await openTestDatabase(kind);
      try {
        const a = await startTestEnv(kind, testDb);
        let team: Awaited<ReturnType<typeof a.team>>;
        let handoffId: string;
        try {
          team = await a.team("alice", "bob");
          const alice = team.member("alice").client;
          await claimAndApprove(team.lead, alice, "alice", "kept");
          const s = await alice.send({ to: "team-lead", message: signoffRequest("kept") });
          await team.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) });
          await team.lead.send({ to: "alice", message: assign("moving") });
          handoffId = (await alice.send({ to: "bob", message: handoffRequest("moving") }))
            .requestId;
        } finally {
          await a.close();
        }
        const b = await startTestEnv(kind, testDb);
        try {
          const lead = b.client(team.leadToken);
          const bob = b.client(team.member("bob").token);
          const kept = await taskOf(lead, "kept");
          expect(kept).toMatchObject({ state: TaskState.DONE, owner: "alice" });
          expect(kept.history.map((r) => [r.kind, r.status])).toEqual([
            [RequestKind.TASK_CLAIM, RequestStatus.APPROVED],
            [RequestKind.RESULT_SIGNOFF, RequestStatus.APPROVED],
          ]);
          expect((await taskOf(lead, "moving")).owner).toBe("alice");
          await bob.send({ to: "alice", message: handoffResponse(handoffId, true) });
          expect(await taskOf(bob, "moving")).toMatchObject({
            state: TaskState.CLAIMED,
            owner: "bob",
          });
          expect((await lead.listTasks({})).tasks.map((k) => [k.taskId, k.state])).toEqual([
            ["moving", TaskState.CLAIMED],
            ["kept", TaskState.DONE],
          ]);
        } finally {
          await b.close();
        }
      } finally {
        await testDb.dispose();
      }
    });
  });
}
