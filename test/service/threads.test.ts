import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole } from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import { deleteAckedMessages } from "../../server/store/retention.js";
import { describeEachDatabase, type TeamClient } from "../support/harness.js";
import {
  inbox,
  planRequest,
  planResponse,
  refused,
  shutdownRequest,
  text,
} from "../support/protocol-helpers.js";

const words = (envelopes: Envelope[]) =>
  envelopes.map((e) =>
    e.message?.kind.case === "text" ? e.message.kind.value : e.message?.kind.case,
  );

/** The envelope of `client`'s inbox whose text is `value`. */
async function received(client: TeamClient, value: string): Promise<Envelope> {
  const found = (await inbox(client)).find(
    (e) => e.message?.kind.case === "text" && e.message.kind.value === value,
  );
  if (!found) throw new Error(`no "${value}" in the inbox`);
  return found;
}

describeEachDatabase("threads: reply_to, GetThread, ListThreads", (env) => {
  it("a reply joins its parent's thread; a new message starts its own", async () => {
    const team = await env().team("alice", "bob");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    await alice.send({ to: "bob", message: text("the parser drops tabs") });
    const parent = await received(bob, "the parser drops tabs");
    expect(parent.id).toMatch(/^env_/);
    expect(parent.threadId).toBe(parent.id);
    expect(parent.replyTo).toBe("");
    await bob.send({ to: "alice", message: text("fixed in lexer.ts"), replyTo: parent.id });
    const reply = await received(alice, "fixed in lexer.ts");
    expect(reply.threadId).toBe(parent.threadId);
    expect(reply.replyTo).toBe(parent.id);
    await alice.send({ to: "bob", message: text("something else") });
    const other = await received(bob, "something else");
    expect(other.threadId).not.toBe(parent.threadId);

    const thread = await alice.getThread({ threadId: parent.threadId });
    expect(words(thread.envelopes)).toEqual(["the parser drops tabs", "fixed in lexer.ts"]);
  });

  it("a broadcast's copies share one id, and a thread shows it once", async () => {
    const team = await env().team("alice", "bob");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    await team.lead.send({ to: "*", message: text("standup in 5") });
    const a = await received(alice, "standup in 5");
    const b = await received(bob, "standup in 5");
    expect(a.id).toBe(b.id);
    await bob.send({ to: "*", message: text("ok"), replyTo: b.id });
    for (const reader of [team.lead, alice, bob]) {
      const thread = await reader.getThread({ threadId: a.threadId });
      expect(words(thread.envelopes)).toEqual(["standup in 5", "ok"]);
    }
    const listed = (await team.lead.listThreads({})).threads.find((t) => t.threadId === a.threadId);
    expect(listed?.messageCount).toBe(2);
  });

  it("a protocol request, its answer and its updates share the request's thread", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    await team.lead.send({ to: "alice", message: text("plan the parser work") });
    const ask = await received(alice, "plan the parser work");
    const { requestId } = await alice.send({
      to: "team-lead",
      message: planRequest("1. rewrite the lexer"),
      replyTo: ask.id,
    });
    await team.lead.send({ to: "alice", message: planResponse(requestId, false, "too broad") });
    // A second request without reply_to: its own thread, named after the request.
    const shut = await team.lead.send({ to: "alice", message: shutdownRequest("done") });
    await team.lead.cancelRequest({ requestId: shut.requestId });

    const thread = await team.lead.getThread({ threadId: ask.threadId });
    expect(thread.envelopes.map((e) => e.message?.kind.case)).toEqual([
      "text",
      "planApprovalRequest",
      "planApprovalResponse",
    ]);
    // The canceled request and the update telling alice so: the request's thread.
    const aboutShutdown = (await inbox(alice)).filter((e) => e.requestId === shut.requestId);
    expect(aboutShutdown.map((e) => e.message?.kind.case)).toEqual([
      "shutdownRequest",
      "requestUpdate",
    ]);
    for (const e of aboutShutdown) expect(e.threadId).toBe(shut.requestId);
  });

  it("ListThreads: newest activity first, paged", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    for (const n of [1, 2, 3]) await team.lead.send({ to: "alice", message: text(`topic ${n}`) });
    const first = await received(alice, "topic 1");
    await alice.send({ to: "team-lead", message: text("back to topic 1"), replyTo: first.id });
    const page1 = await alice.listThreads({ pageSize: 2 });
    expect(page1.threads.map((t) => words([t.first as Envelope])[0])).toEqual([
      "topic 1",
      "topic 3",
    ]);
    expect(words([page1.threads[0]?.latest as Envelope])).toEqual(["back to topic 1"]);
    expect(page1.threads[0]?.messageCount).toBe(2);
    const page2 = await alice.listThreads({ pageSize: 2, pageToken: page1.nextPageToken });
    expect(page2.threads.map((t) => words([t.first as Envelope])[0])).toEqual(["topic 2"]);
    expect(page2.nextPageToken).toBe("");
  });

  it("ListThreads after retention: a thread whose newest message was deleted is ordered by its newest left", async () => {
    const team = await env().team("alice", "bob");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    await alice.send({ to: "team-lead", message: text("x1") });
    const x1 = await received(team.lead, "x1");
    await bob.send({ to: "team-lead", message: text("y1") });
    await team.lead.send({ to: "alice", message: text("x2"), replyTo: x1.id });
    const order = async () =>
      (await team.lead.listThreads({})).threads.map((t) => [
        t.messageCount,
        words(t.latest ? [t.latest] : [])[0],
      ]);
    expect(await order()).toEqual([
      [2, "x2"],
      [1, "y1"],
    ]);
    await alice.ack({ seq: (await inbox(alice)).at(-1)?.seq ?? 0n });
    await deleteAckedMessages(env().db, new Date(Date.now() + 60_000), 1000);
    expect(await order()).toEqual([
      [1, "y1"],
      [1, "x1"],
    ]);
    expect((await alice.listThreads({})).threads.map((t) => t.latest?.message?.kind.value)).toEqual(
      ["x1"],
    );
  });

  it("a reply to a message the sender may not read, or to no message, is refused", async () => {
    const team = await env().team("alice", "bob", "carol");
    await team.lead.send({ to: "bob", message: text("for bob only") });
    const secret = await received(team.member("bob").client, "for bob only");
    const carol = team.member("carol").client;
    for (const replyTo of [secret.id, "env_nothing"]) {
      const r = await refused(() => carol.send({ to: "bob", message: text("hi"), replyTo }));
      expect(r.code).toBe(Code.NotFound);
      expect(r.detail?.rule).toBe("known-reply-to");
      expect(r.detail?.field).toBe("reply_to");
    }
    // The same through the group-commit path and a keyed send: nothing stored.
    expect((await inbox(team.member("bob").client)).length).toBe(1);
  });

  it("visibility matches ReadInbox: teammate, lead, observer, removed member, other team", async () => {
    const team = await env().team("alice", "bob", "carol");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    const carol = team.member("carol").client;
    const eye = env().client(
      (await team.lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token,
    );
    await alice.send({ to: "bob", message: text("alice to bob") });
    const root = await received(bob, "alice to bob");
    await bob.send({ to: "team-lead", message: text("bob to lead"), replyTo: root.id });
    await team.lead.send({ to: "carol", message: text("lead to carol"), replyTo: root.id });
    const all = ["alice to bob", "bob to lead", "lead to carol"];
    const threadOf = async (c: TeamClient) =>
      words((await c.getThread({ threadId: root.threadId })).envelopes);
    // Each teammate: what its inbox holds and what it sent.
    expect(await threadOf(alice)).toEqual(["alice to bob"]);
    expect(await threadOf(bob)).toEqual(["alice to bob", "bob to lead"]);
    expect(await threadOf(carol)).toEqual(["lead to carol"]);
    // The lead and an observer: the team.
    expect(await threadOf(team.lead)).toEqual(all);
    expect(await threadOf(eye)).toEqual(all);
    for (const [c, n] of [
      [alice, 1],
      [bob, 2],
      [carol, 1],
      [team.lead, 3],
      [eye, 3],
    ] as const) {
      const t = (await c.listThreads({})).threads.find((x) => x.threadId === root.threadId);
      expect(t?.messageCount).toBe(n);
    }
    // A teammate that received nothing of a thread: NotFound, as for a thread that is not there.
    await alice.send({ to: "bob", message: text("private") });
    const priv = await received(bob, "private");
    expect((await refused(() => carol.getThread({ threadId: priv.threadId }))).code).toBe(
      Code.NotFound,
    );
    expect((await carol.listThreads({})).threads.map((t) => t.threadId)).not.toContain(
      priv.threadId,
    );
    // Another team's lead: nothing.
    const other = await env().team();
    expect((await refused(() => other.lead.getThread({ threadId: root.threadId }))).code).toBe(
      Code.NotFound,
    );
    expect((await other.lead.listThreads({})).threads).toEqual([]);
    // A removed member: its token no longer works at all.
    await team.lead.removeMember({ name: "alice" });
    expect((await refused(() => alice.getThread({ threadId: root.threadId }))).code).toBe(
      Code.Unauthenticated,
    );
    expect((await refused(() => alice.listThreads({}))).code).toBe(Code.Unauthenticated);
  });

  it("shape: thread_id and reply_to are bounded and hold no control characters", async () => {
    const team = await env().team("alice");
    for (const threadId of ["", "x".repeat(129), "a\0b"]) {
      const r = await refused(() => team.lead.getThread({ threadId }));
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.detail?.field).toBe("thread_id");
    }
    const r = await refused(() =>
      team.lead.send({ to: "alice", message: text("x"), replyTo: "a\0b" }),
    );
    expect(r.detail?.field).toBe("reply_to");
  });
});
