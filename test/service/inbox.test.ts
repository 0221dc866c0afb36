import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { SendRequestSchema, type SubscribeResponse } from "../../gen/team/v1/team_service_pb.js";
import { collect, describeEachDatabase } from "../support/harness.js";
import { subscribedBeyond } from "../support/subscribed.js";
import {
  describeEvents,
  envelopesOf,
  openSubscription,
  type SubscriptionReader,
} from "../support/subscription-reader.js";

const text = (t: string) => ({ kind: { case: "text" as const, value: t } });

/** The envelopes of a subscription, until `count` of them arrived. */
async function receive(stream: AsyncIterable<SubscribeResponse>, count: number) {
  const events = await collect(
    stream,
    (items) => items.filter((e) => e.event.case === "envelope").length >= count,
  );
  return events.flatMap((e) => (e.event.case === "envelope" ? [e.event.value] : []));
}

describeEachDatabase(
  "inboxes",
  (env) => {
    it("delivers a message to a live subscriber, and again to a later Subscribe and ReadInbox", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const live = openSubscription(alice, { afterSeq: 0n });
      try {
        // A heartbeat comes only once the backlog read is over and the stream waits for
        // wake-ups: what is sent after it cannot be part of the backlog.
        const first = await live.next();
        expect(first.event).toMatchObject({ case: "heartbeat", value: { lastSeq: 0n } });
        const sent = await t.lead.send({ to: "alice", message: text("hello alice") });
        expect(sent.seq).toBe(1n);
        const [envelope] = envelopesOf(await live.envelopes(1));
        expect(envelope).toMatchObject({
          team: t.name,
          seq: 1n,
          from: "team-lead",
          to: "alice",
          message: text("hello alice"),
        });
      } finally {
        live.close();
      }

      const later = await receive(alice.subscribe({}), 1);
      expect(later.map((e) => e.seq)).toEqual([1n]);
      const read = await alice.readInbox({});
      expect(read.envelopes.map((e) => e.message?.kind.value)).toEqual(["hello alice"]);
      expect(read.lastSeq).toBe(1n);
    });

    it("takes `from` from the token: SendRequest has no field to claim a sender", async () => {
      expect(SendRequestSchema.fields.map((f) => f.name)).not.toContain("from");
      const t = await env().team("alice", "bob");
      await t.member("bob").client.send({ to: "alice", message: text("from bob") });
      const read = await t.member("alice").client.readInbox({});
      expect(read.envelopes[0]?.from).toBe("bob");
    });

    it("broadcasts to every other active member exactly once, never the sender or removed members", async () => {
      const t = await env().team("alice", "bob", "carol", "dave");
      await t.lead.removeMember({ name: "dave" });
      const sent = await t.member("alice").client.send({ to: "*", message: text("all hands") });
      expect(sent.seq).toBe(0n);
      expect(sent.deliveries.map((d) => d.to).sort()).toEqual(["bob", "carol", "team-lead"]);
      for (const reader of [t.lead, t.member("bob").client, t.member("carol").client]) {
        const read = await reader.readInbox({});
        expect(read.envelopes).toHaveLength(1);
        expect(read.envelopes[0]).toMatchObject({ from: "alice", to: "*", seq: 1n });
      }
      expect((await t.member("alice").client.readInbox({})).envelopes).toHaveLength(0);
      // dave's token is revoked, so check his inbox in the database itself.
      const [row] = await env().db.query<{ n: bigint }>(
        `SELECT count(*) AS n FROM messages m JOIN members r ON r.id = m.recipient_id
       JOIN teams t ON t.id = r.team_id WHERE t.name = $1 AND r.name = 'dave'`,
        [t.name],
      );
      expect(row?.n).toBe(0n);
    });

    it("20 concurrent senders x 50 messages into one inbox: all 1,000 in gap-free seq order, each sender's in its order", async () => {
      const senders = Array.from({ length: 20 }, (_, i) => `s${i}`);
      const t = await env().team(...senders);
      const abort = new AbortController();
      const before = env().app.hub.waiting;
      const live = receive(t.lead.subscribe({ afterSeq: 0n }, { signal: abort.signal }), 1000);
      await subscribedBeyond(env().app, before); // every message is sent while it is open
      await Promise.all(
        senders.map(async (name) => {
          for (let i = 0; i < 50; i++) {
            await t.member(name).client.send({ to: "team-lead", message: text(`${name}:${i}`) });
          }
        }),
      );
      const got = await live;
      abort.abort();
      expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)));
      for (const name of senders) {
        const mine = got.filter((e) => e.from === name).map((e) => e.message?.kind.value);
        expect(mine).toEqual(Array.from({ length: 50 }, (_, i) => `${name}:${i}`));
      }
    });

    it("resumes after a disconnect from the last seq seen, or from the ack cursor, then goes on live: nothing lost, nothing repeated", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const send = (i: number) => t.lead.send({ to: "alice", message: text(`m${i}`) });
      /** Reads on until the stream is idle at `seq`: a heartbeat says that is its position. */
      const idleAt = (reader: SubscriptionReader, seq: bigint) =>
        reader.until((e) => e.event.case === "heartbeat" && e.event.value.lastSeq === seq);
      const texts = (reader: SubscriptionReader) =>
        envelopesOf(reader.events).map((e) => e.message?.kind.value);
      const range = (from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, i) => `m${from + i}`);

      for (let i = 1; i <= 5; i++) await send(i);
      const first = await receive(alice.subscribe({}), 3); // breaks the stream after 3
      expect(first.map((e) => e.seq)).toEqual([1n, 2n, 3n]);
      for (let i = 6; i <= 8; i++) await send(i);

      // From the last seq seen: the backlog m4..m8, then m9 sent while the backlog is being
      // read, and m10, m11 sent once it has all come.
      const resumed = openSubscription(alice, { afterSeq: 3n });
      try {
        await resumed.envelopes(1);
        await send(9);
        await resumed.envelopes(4);
        for (let i = 10; i <= 11; i++) await send(i);
        await idleAt(resumed, 11n);
        expect(texts(resumed), describeEvents(resumed.events)).toEqual(range(4, 11));
      } finally {
        resumed.close();
      }

      // From the ack cursor: the backlog m7..m11, then m12, m13 live.
      await alice.ack({ seq: 6n });
      const fromCursor = openSubscription(alice);
      try {
        await fromCursor.envelopes(5);
        for (let i = 12; i <= 13; i++) await send(i);
        await idleAt(fromCursor, 13n);
        expect(texts(fromCursor), describeEvents(fromCursor.events)).toEqual(range(7, 13));
        expect(envelopesOf(fromCursor.events).map((e) => e.seq)).toEqual(
          Array.from({ length: 7 }, (_, i) => BigInt(7 + i)),
        );
      } finally {
        fromCursor.close();
      }
    });

    it("a retried Send with the same message_id stores one message and returns the first result", async () => {
      const t = await env().team("alice");
      const first = await t.lead.send({ to: "alice", message: text("once"), messageId: "m-1" });
      const again = await t.lead.send({ to: "alice", message: text("once"), messageId: "m-1" });
      expect(first.replayed).toBe(false);
      expect(again.replayed).toBe(true);
      expect(again.seq).toBe(first.seq);
      expect(again.deliveries).toEqual(first.deliveries);
      const concurrent = await Promise.all(
        Array.from({ length: 10 }, () =>
          t.lead.send({ to: "alice", message: text("burst"), messageId: "m-2" }),
        ),
      );
      expect(new Set(concurrent.map((r) => r.seq))).toEqual(new Set([2n]));
      expect(concurrent.filter((r) => !r.replayed)).toHaveLength(1);
      const read = await t.member("alice").client.readInbox({});
      expect(read.envelopes.map((e) => e.message?.kind.value)).toEqual(["once", "burst"]);
    });

    it("refuses a message_id reused for a different message with AlreadyExists", async () => {
      const t = await env().team("alice");
      await t.lead.send({ to: "alice", message: text("one"), messageId: "k" });
      const err = await t.lead
        .send({ to: "alice", message: text("two"), messageId: "k" })
        .catch((e) => ConnectError.from(e));
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.AlreadyExists);
      expect((await t.member("alice").client.readInbox({})).envelopes).toHaveLength(1);
    });

    it("message_ids are per sender: two senders may use the same key", async () => {
      const t = await env().team("alice", "bob");
      await t.member("alice").client.send({ to: "team-lead", message: text("a"), messageId: "x" });
      await t.member("bob").client.send({ to: "team-lead", message: text("b"), messageId: "x" });
      expect((await t.lead.readInbox({})).envelopes.map((e) => e.from)).toEqual(["alice", "bob"]);
    });

    it("ReadInbox with ack drains; Ack never moves back and refuses a seq past the inbox", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      for (let i = 1; i <= 3; i++) await t.lead.send({ to: "alice", message: text(`m${i}`) });
      const page = await alice.readInbox({ limit: 2, ack: true });
      expect(page.envelopes.map((e) => e.seq)).toEqual([1n, 2n]);
      expect(page.ackedSeq).toBe(2n);
      const rest = await alice.readInbox({ ack: true });
      expect(rest.envelopes.map((e) => e.seq)).toEqual([3n]);
      expect((await alice.readInbox({})).envelopes).toHaveLength(0);
      expect((await alice.ack({ seq: 1n })).ackedSeq).toBe(3n);
      const err = await alice.ack({ seq: 4n }).catch((e) => ConnectError.from(e));
      expect((err as ConnectError).code).toBe(Code.OutOfRange);
      // An explicit after_seq re-reads what was acked (replay).
      expect((await alice.readInbox({ afterSeq: 0n })).envelopes).toHaveLength(3);
    });

    it("refuses a send to a member that does not exist or is stopped (known-recipient)", async () => {
      const t = await env().team("alice");
      await t.lead.removeMember({ name: "alice" });
      for (const to of ["nobody", "alice"]) {
        const err = await t.lead
          .send({ to, message: text("hi") })
          .catch((e) => ConnectError.from(e));
        expect((err as ConnectError).code).toBe(Code.NotFound);
        expect((err as ConnectError).rawMessage).toMatch(/^known-recipient: /);
      }
    });

    it("sends a heartbeat on an idle subscription", async () => {
      const t = await env().team("alice");
      // The env's heartbeat interval is 15 s by default; this suite's server uses 200 ms.
      const events = await collect(
        t.member("alice").client.subscribe({}),
        (items) => items.length >= 1,
      );
      expect(events[0]?.event.case).toBe("heartbeat");
    });
  },
  { heartbeatIntervalMs: 200 },
);

describeEachDatabase(
  "inbox wake-ups",
  (env) => {
    it("pushes a message to an open, idle subscription when it commits, not at the next heartbeat", async () => {
      const t = await env().team("alice");
      const stream = openSubscription(t.member("alice").client, { afterSeq: 0n });
      try {
        await t.lead.send({ to: "alice", message: text("one") });
        // Whether it came as backlog or live, the stream has read its inbox once it has it.
        expect(envelopesOf([await stream.next()]).map((e) => e.seq)).toEqual([1n]);
        await t.lead.send({ to: "alice", message: text("two") });
        // The heartbeat (and the re-read after it) is a minute away: only the wake-up of
        // the commit can deliver this within the test's time.
        const next = await stream.next();
        expect(next.event).toMatchObject({ case: "envelope", value: { seq: 2n } });
      } finally {
        stream.close();
      }
    });
  },
  { heartbeatIntervalMs: 60_000 },
);
