import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { MemberStatus, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { parseConfig } from "../../server/config.js";
import type { BacklogLimits } from "../../server/domain/limits.js";
import { LimitError } from "../../server/errors.js";
import { ack } from "../../server/store/inbox.js";
import type { SendInput } from "../../server/store/send.js";
import { sendBatch } from "../../server/store/send-batch.js";
import { createSender } from "../../server/store/sender.js";
import { describeEachDatabase, type TestEnv, type TestTeam } from "../support/harness.js";
import {
  inbox,
  kindOf,
  pollStatus,
  refused,
  requestRecord,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";

/** The limits of the suite's server: small, so a test fills an inbox in a few sends. */
const LIMITS: BacklogLimits = { maxMessages: 5, maxBytes: 3_500 };

/** A text whose stored body (team.v1.Message, protobuf) is exactly 1,000 bytes. */
const kilobyte = (tag: string) => text(tag.padEnd(997, "."));

/** The member's inbox as the database counts it: its backlog, and the counters' view of it. */
async function backlogOf(env: TestEnv, team: string, name: string) {
  const [row] = await env.db.query<{
    messages: bigint;
    counted_bytes: bigint;
    stored_bytes: bigint;
  }>(
    `SELECT i.last_seq - m.acked_seq AS messages,
            i.appended_bytes - m.acked_bytes AS counted_bytes,
            (SELECT coalesce(sum(octet_length(body)), 0) FROM messages
             WHERE recipient_id = m.id AND seq > m.acked_seq) AS stored_bytes
     FROM members m JOIN teams t ON t.id = m.team_id JOIN inboxes i ON i.member_id = m.id
     WHERE t.name = $1 AND m.name = $2`,
    [team, name],
  );
  if (!row) throw new Error(`no ${name}`);
  return {
    messages: Number(row.messages),
    bytes: Number(row.stored_bytes),
    countedBytes: Number(row.counted_bytes),
  };
}

async function memberId(env: TestEnv, team: string, name: string) {
  const [row] = await env.db.query<{ id: number; team_id: number }>(
    "SELECT m.id, m.team_id FROM members m JOIN teams t ON t.id = m.team_id WHERE t.name = $1 AND m.name = $2",
    [team, name],
  );
  if (!row) throw new Error(`no ${name}`);
  return row;
}

/** "stored", or the rule (or code) that refused the call. */
const outcomeOf = (call: Promise<unknown>): Promise<string> =>
  call.then(
    () => "stored",
    (e: unknown) => {
      const err = ConnectError.from(e);
      return err.findDetails(RuleViolationSchema)[0]?.rule ?? Code[err.code];
    },
  );

/** Sends `n` texts from the lead to `to` (each awaited), which must all be stored. */
async function fill(t: TestTeam, to: string, n: number, message = text("x")) {
  for (let i = 0; i < n; i++) await t.lead.send({ to, message });
}

describeEachDatabase(
  "inbox backlog limit (inbox-backlog)",
  (env) => {
    it("refuses a send past the recipient's message count, naming it and the limit; stores nothing", async () => {
      const t = await env().team("bob");
      await fill(t, "bob", 5);
      const r = await refused(() => t.lead.send({ to: "bob", message: text("sixth") }));
      expect(r.code).toBe(Code.ResourceExhausted);
      expect(r.message).toBe(
        'inbox-backlog: "bob" holds 5 unacked messages, the most an inbox may hold ' +
          "(MAX_INBOX_BACKLOG 5); nothing was sent: retry once it acks what it has read",
      );
      expect(r.detail?.rule).toBe("inbox-backlog");
      expect(r.detail?.field).toBe("to");
      expect((await inbox(t.member("bob").client)).length).toBe(5);
      expect(await backlogOf(env(), t.name, "bob")).toMatchObject({ messages: 5 });
    });

    it("refuses a send past the recipient's bytes, naming it and the byte limit", async () => {
      const t = await env().team("bob");
      await fill(t, "bob", 3, kilobyte("a"));
      const r = await refused(() => t.lead.send({ to: "bob", message: kilobyte("b") }));
      expect(r.code).toBe(Code.ResourceExhausted);
      expect(r.message).toBe(
        'inbox-backlog: "bob" holds 3000 bytes of unacked messages, and 1000 more would pass ' +
          "the most an inbox may hold (MAX_INBOX_BACKLOG_BYTES 3500); nothing was sent: " +
          "retry once it acks what it has read",
      );
      expect(r.detail?.rule).toBe("inbox-backlog");
      // What still fits goes through: 3,000 + 500 is the limit exactly.
      await t.lead.send({ to: "bob", message: text("y".padEnd(497, ".")) });
      expect(await backlogOf(env(), t.name, "bob")).toEqual({
        messages: 4,
        bytes: 3_500,
        countedBytes: 3_500,
      });
    });

    it("acks make room again, by count and by bytes (Ack and ReadInbox with ack)", async () => {
      const t = await env().team("bob", "carol");
      const bob = t.member("bob").client;
      await fill(t, "bob", 5);
      await refused(() => t.lead.send({ to: "bob", message: text("full") }));
      await bob.ack({ seq: 2n });
      await fill(t, "bob", 2);
      await refused(() => t.lead.send({ to: "bob", message: text("full again") }));
      const read = await bob.readInbox({ ack: true, limit: 1000 });
      expect(read.envelopes.map((e) => e.seq)).toEqual([3n, 4n, 5n, 6n, 7n]);
      await fill(t, "bob", 5);

      const carol = t.member("carol").client;
      await fill(t, "carol", 3, kilobyte("k"));
      await refused(() => t.lead.send({ to: "carol", message: kilobyte("over") }));
      await carol.ack({ seq: 1n });
      await t.lead.send({ to: "carol", message: kilobyte("fits now") });
      expect(await backlogOf(env(), t.name, "carol")).toEqual({
        messages: 3,
        bytes: 3_000,
        countedBytes: 3_000,
      });
    });

    it("holds on the transaction path too: a message_id, and a protocol step (rolled back whole)", async () => {
      const t = await env().team("bob");
      const bob = t.member("bob").client;
      const asked = await t.lead.send({ to: "bob", message: shutdownRequest("done") });
      await fill(t, "bob", 4);
      // A send with an idempotency key takes its own transaction: refused alike.
      const keyed = await refused(() =>
        t.lead.send({ to: "bob", message: text("keyed"), messageId: "m-1" }),
      );
      expect(keyed.detail?.rule).toBe("inbox-backlog");
      // Fill the lead's inbox; bob's approval must then be refused, and change nothing.
      for (let i = 0; i < 5; i++) await bob.send({ to: "team-lead", message: text(`r${i}`) });
      const approval = await refused(() =>
        bob.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) }),
      );
      expect(approval.code).toBe(Code.ResourceExhausted);
      expect(approval.message).toContain('"team-lead" holds 5 unacked messages');
      expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.PENDING);
      const members = await t.lead.listMembers({});
      expect(members.members.find((m) => m.name === "bob")?.status).toBe(MemberStatus.ACTIVE);
      // Once the lead has read its inbox, the same approval goes through.
      await t.lead.readInbox({ ack: true, limit: 1000 });
      await bob.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) });
      expect((await requestRecord(t.lead, asked.requestId)).status).toBe(RequestStatus.APPROVED);
    });

    it("a retry of a stored message_id still replays when the inbox has filled since", async () => {
      const t = await env().team("bob");
      const first = await t.lead.send({ to: "bob", message: text("once"), messageId: "k-1" });
      await fill(t, "bob", 4);
      const fresh = await refused(() =>
        t.lead.send({ to: "bob", message: text("new"), messageId: "k-2" }),
      );
      expect(fresh.detail?.rule).toBe("inbox-backlog");
      // The retry stores nothing new, so it is no send past the limit: it gets its answer.
      const again = await t.lead.send({ to: "bob", message: text("once"), messageId: "k-1" });
      expect(again).toMatchObject({ seq: first.seq, replayed: true });
    });

    it("a broadcast with one recipient full is refused whole, naming who is full", async () => {
      const t = await env().team("a", "b", "c");
      await fill(t, "b", 5);
      await fill(t, "c", 5);
      for (const messageId of ["", "bc-1"]) {
        // Group commit (no message_id) and a transaction (message_id): the same answer.
        const r = await refused(() =>
          t.member("a").client.send({ to: "*", message: text("all or none"), messageId }),
        );
        expect(r.code).toBe(Code.ResourceExhausted);
        expect(r.message).toMatch(
          /^inbox-backlog: "b" holds 5 unacked messages, .*; "c" holds 5 unacked messages, .*; nothing was sent to anyone: retry once they ack what they have read$/,
        );
      }
      // Nobody got it: not the lead, whose inbox had room.
      expect(await inbox(t.lead)).toEqual([]);
      expect((await backlogOf(env(), t.name, "b")).messages).toBe(5);
    });

    it("many concurrent senders never push an inbox past its limit, on either path", async () => {
      const senders = Array.from({ length: 8 }, (_, i) => `s${i}`);
      const t = await env().team(...senders);
      const outcomes = await Promise.all(
        senders.flatMap((s, k) =>
          Array.from({ length: 6 }, (_, i) =>
            outcomeOf(
              t.member(s).client.send({
                to: "team-lead",
                message: text(`${s}:${i}`),
                // A third go by transaction, the rest by group commit.
                messageId: (k + i) % 3 === 0 ? `${s}-${i}` : "",
              }),
            ),
          ),
        ),
      );
      expect(outcomes.filter((o) => o === "stored")).toHaveLength(5);
      expect(outcomes.filter((o) => o === "inbox-backlog")).toHaveLength(43);
      expect(await backlogOf(env(), t.name, "team-lead")).toMatchObject({ messages: 5 });
      expect((await inbox(t.lead)).length).toBe(5);
    });

    it("concurrent senders of large messages never pass the byte limit", async () => {
      const senders = Array.from({ length: 6 }, (_, i) => `s${i}`);
      const t = await env().team(...senders);
      const outcomes = await Promise.all(
        senders.flatMap((s) =>
          Array.from({ length: 3 }, (_, i) =>
            outcomeOf(t.member(s).client.send({ to: "team-lead", message: kilobyte(`${s}${i}`) })),
          ),
        ),
      );
      // 3,500 bytes hold three bodies of 1,000; every other send was refused for it.
      expect(outcomes.filter((o) => o === "stored")).toHaveLength(3);
      expect(outcomes.filter((o) => o === "inbox-backlog")).toHaveLength(15);
      expect(await backlogOf(env(), t.name, "team-lead")).toEqual({
        messages: 3,
        bytes: 3_000,
        countedBytes: 3_000,
      });
    });

    it("the server's own notices are never refused: an expiry reaches a full requester", async () => {
      const t = await env().team("bob");
      const asked = await t.lead.send({
        to: "bob",
        message: shutdownRequest(),
        ttl: { seconds: 1n, nanos: 0 },
      });
      for (let i = 0; i < 5; i++) {
        await t.member("bob").client.send({ to: "team-lead", message: text(`b${i}`) });
      }
      const full = await refused(() =>
        t.member("bob").client.send({ to: "team-lead", message: text("one more") }),
      );
      expect(full.detail?.rule).toBe("inbox-backlog");
      await pollStatus(t.lead, asked.requestId, RequestStatus.EXPIRED);
      // The sweeper may be slower than the deadline: give it every chance, then look.
      for (;;) {
        await env().app.sweeper.sweep();
        const got = await inbox(t.lead);
        if (got.some((e) => kindOf(e.message) === "requestUpdate")) break;
      }
      expect(await backlogOf(env(), t.name, "team-lead")).toMatchObject({ messages: 6 });
    });
  },
  { inboxBacklog: LIMITS },
);

describeEachDatabase("inbox backlog in the store's two paths", (env) => {
  async function sendsTo(t: TestTeam, from: string) {
    const m = await memberId(env(), t.name, from);
    return (to: string, bytes: number): SendInput => ({
      teamId: m.team_id,
      sender: { id: m.id, name: from },
      to,
      kind: "text",
      body: new Uint8Array(bytes),
    });
  }

  it("the group-commit statement never stores past a limit, counting the batch in arrival order", async () => {
    const t = await env().team("a", "b");
    const from = await sendsTo(t, "a");
    const limits = { maxMessages: 3, maxBytes: 0 };
    const results = await sendBatch(
      env().db,
      [from("b", 1), from("team-lead", 1), from("b", 1), from("b", 1), from("b", 1), from("*", 1)],
      limits,
    );
    expect(results.map((r) => (r instanceof LimitError ? r.rule : "stored"))).toEqual([
      "stored",
      "stored",
      "stored",
      "stored",
      "inbox-backlog",
      "inbox-backlog",
    ]);
    expect((await backlogOf(env(), t.name, "b")).messages).toBe(3);
    // The refused broadcast reached nobody: the lead holds only its one message.
    expect(await backlogOf(env(), t.name, "team-lead")).toMatchObject({ messages: 1 });
  });

  it("a send the batch refused only because of a refused send before it is stored all the same", async () => {
    const t = await env().team("a");
    const from = await sendsTo(t, "a");
    const limits = { maxMessages: 0, maxBytes: 1_000 };
    const lead = await memberId(env(), t.name, "team-lead");
    // The statement alone is cautious: it counts the big one it refuses against the small one.
    const cautious = await sendBatch(
      env().db,
      [from("team-lead", 2_000), from("team-lead", 10)],
      limits,
    );
    expect(cautious.map((r) => (r instanceof Error ? "refused" : "stored"))).toEqual([
      "refused",
      "refused",
    ]);
    // Through the store's send(): hold the inbox so that the two sends queue as one batch
    // behind two that go first; the small one must be stored, the big one refused.
    const sender = createSender(env().db, limits);
    const outcomes: Promise<string>[] = [];
    await env().db.transaction(async (tx) => {
      await tx.query("SELECT 1 FROM inboxes WHERE member_id = $1 FOR UPDATE", [lead.id]);
      for (const bytes of [1, 1, 2_000, 10]) {
        outcomes.push(
          sender.send(from("team-lead", bytes)).then(
            () => `stored ${bytes}`,
            (err: LimitError) => `${err.rule} ${bytes}`,
          ),
        );
      }
    });
    expect(await Promise.all(outcomes)).toEqual([
      "stored 1",
      "stored 1",
      "inbox-backlog 2000",
      "stored 10",
    ]);
    expect(await backlogOf(env(), t.name, "team-lead")).toEqual({
      messages: 3,
      bytes: 12,
      countedBytes: 12,
    });
  });
});

describeEachDatabase("inbox backlog byte counters", (env) => {
  it("stay in step with the bodies unacked, whatever the order of racing acks", async () => {
    const t = await env().team("bob");
    for (let i = 0; i < 10; i++) {
      await t.lead.send({ to: "bob", message: text("z".repeat(1 + i * 37)) });
      await t.lead.send({ to: "bob", message: text("w".repeat(300 - i * 11)) });
      if (i === 3) await t.member("bob").client.readInbox({ ack: true, limit: 1000 });
    }
    const bob = await memberId(env(), t.name, "bob");
    const check = async (unacked: number) => {
      const b = await backlogOf(env(), t.name, "bob");
      expect(b.messages).toBe(unacked);
      expect(b.countedBytes).toBe(b.bytes);
    };
    await check(12);
    // Racing acks of one member, out of order, one of them behind the cursor.
    await Promise.all([12n, 3n, 15n, 10n].map((seq) => ack(env().db, bob.id, seq)));
    await check(5);
    await Promise.all([20n, 17n, 19n].map((seq) => ack(env().db, bob.id, seq)));
    await check(0);
  });
});

describe("inbox backlog configuration", () => {
  it("defaults to 10,000 messages and 64 MiB per inbox; env and flags set them; 0 is no limit", () => {
    const c = parseConfig([], {});
    expect([c.maxInboxBacklog, c.maxInboxBacklogBytes]).toEqual([10_000, 64 * 1024 * 1024]);
    expect(
      parseConfig([], { MAX_INBOX_BACKLOG: "50", MAX_INBOX_BACKLOG_BYTES: "0" }),
    ).toMatchObject({ maxInboxBacklog: 50, maxInboxBacklogBytes: 0 });
    expect(
      parseConfig(["--max-inbox-backlog", "7", "--max-inbox-backlog-bytes", "4096"], {
        MAX_INBOX_BACKLOG: "50",
      }),
    ).toMatchObject({ maxInboxBacklog: 7, maxInboxBacklogBytes: 4_096 });
  });
});
