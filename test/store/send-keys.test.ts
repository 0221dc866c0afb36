import { expect, it } from "vitest";
import { DEFAULT_BACKLOG_LIMITS } from "../../server/domain/limits.js";
import { DomainError, RuleViolationError } from "../../server/errors.js";
import { readInbox } from "../../server/store/inbox.js";
import type { SendInput, SendResult } from "../../server/store/send.js";
import { sendBatch } from "../../server/store/send-batch.js";
import { KeyTaken } from "../../server/store/send-keys.js";
import { createSender } from "../../server/store/sender.js";
import { describeEachStore, insertMember, insertTeam } from "../support/sql-fixtures.js";

const body = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Sends with a message_id in the group commit: idempotency inside a batch. */
describeEachStore("keyed sends in the group commit", (db) => {
  async function teamOf(...names: string[]) {
    const t = await insertTeam(db(), names);
    const idOf = (name: string) => t.member(name);
    /** A text send; `key` gives it a message_id, fingerprinted by its text (as the handler does). */
    const send = (from: string, to: string, msg: string, key?: string): SendInput => ({
      teamId: idOf(from).teamId,
      sender: { id: idOf(from).id, name: from },
      to,
      kind: "text",
      body: body(msg),
      ...(key ? { messageId: key, fingerprint: body(`${to}:${msg}`) } : {}),
    });
    const inboxOf = async (name: string) => {
      // By name each time: members added after the team was made have inboxes too.
      const [member] = await db().query<{ id: number }>(
        "SELECT id FROM members WHERE team_id = $1 AND name = $2",
        [t.id, name],
      );
      return (await readInbox(db(), member?.id ?? 0, 0n, 1000)).map((m) => ({
        text: text(m.body),
        messageId: m.messageId,
        seq: m.seq,
      }));
    };
    const keysOf = async (name: string) =>
      (
        await db().query<{ message_id: string }>(
          "SELECT message_id FROM sends WHERE sender_id = $1 ORDER BY message_id",
          [idOf(name).id],
        )
      ).map((r) => r.message_id);
    return { t, send, inboxOf, keysOf };
  }

  it("one batch of keyed and plain sends is one transaction: stored once, seqs in batch order, each key's result recorded for a retry", async () => {
    const { send, inboxOf } = await teamOf("a", "b");
    const results = await sendBatch(db(), [
      send("a", "team-lead", "1", "a-1"),
      send("b", "team-lead", "2"),
      send("b", "*", "3", "b-1"),
      send("a", "team-lead", "4", "a-2"),
    ]);
    const ok = results as SendResult[];
    expect(ok.map((r) => r.deliveries.map((d) => [d.to, d.seq]))).toEqual([
      [["team-lead", 1n]],
      [["team-lead", 2n]],
      [
        ["team-lead", 3n],
        ["a", 1n],
      ],
      [["team-lead", 4n]],
    ]);
    expect(await inboxOf("team-lead")).toEqual([
      { text: "1", messageId: "a-1", seq: 1n },
      { text: "2", messageId: "", seq: 2n },
      { text: "3", messageId: "b-1", seq: 3n },
      { text: "4", messageId: "a-2", seq: 4n },
    ]);
    // Retried one by one through the store's send(): each replays what the batch stored.
    const sender = createSender(db(), DEFAULT_BACKLOG_LIMITS);
    const broadcast = await sender.send(send("b", "*", "3", "b-1"));
    expect(broadcast).toEqual({ ...ok[2], replayed: true });
    expect(await sender.send(send("a", "team-lead", "4", "a-2"))).toEqual({
      ...ok[3],
      replayed: true,
    });
    expect((await inboxOf("team-lead")).length).toBe(4);
  });

  it("the same key twice in one batch: the first is stored, the second is decided after it (replayed, or AlreadyExists for another message)", async () => {
    const { send, inboxOf, keysOf } = await teamOf("a");
    const batch = await sendBatch(db(), [
      send("a", "team-lead", "first", "k"),
      send("a", "team-lead", "first", "k"),
      send("a", "team-lead", "other", "k"),
    ]);
    expect(batch[0]).not.toBeInstanceOf(Error);
    expect(batch[1]).toBeInstanceOf(KeyTaken);
    expect(batch[2]).toBeInstanceOf(KeyTaken);
    expect(await inboxOf("team-lead")).toEqual([{ text: "first", messageId: "k", seq: 1n }]);

    // Through the sender the duplicates land in one batch: the first two calls go at once
    // (two batches in flight), the next ones wait and go together.
    const sender = createSender(db(), DEFAULT_BACKLOG_LIMITS);
    const settled = await Promise.allSettled([
      sender.send(send("a", "team-lead", "f1")),
      sender.send(send("a", "team-lead", "f2")),
      sender.send(send("a", "team-lead", "twice", "k2")),
      sender.send(send("a", "team-lead", "twice", "k2")),
      sender.send(send("a", "team-lead", "not the same", "k2")),
    ]);
    const [, , first, again, other] = settled;
    expect(first?.status).toBe("fulfilled");
    expect(again?.status).toBe("fulfilled");
    if (first?.status !== "fulfilled" || again?.status !== "fulfilled") return;
    expect(first.value.replayed).toBe(false);
    expect(again.value).toEqual({ ...first.value, replayed: true });
    expect(other?.status).toBe("rejected");
    const refusal = (other as PromiseRejectedResult).reason;
    expect(refusal).toBeInstanceOf(DomainError);
    expect((refusal as DomainError).refusal).toBe("already-exists");
    expect((await inboxOf("team-lead")).filter((m) => m.messageId === "k2")).toHaveLength(1);
    expect(await keysOf("a")).toEqual(["k", "k2"]);
  });

  it("a keyed send the batch refuses stores nothing and gives its key back; the others of the batch are stored", async () => {
    const { t, send, inboxOf, keysOf } = await teamOf("a");
    const results = await sendBatch(db(), [
      send("a", "team-lead", "fine", "ok-1"),
      send("a", "nobody", "lost", "late-1"),
      send("a", "nobody", "lost", "late-1"),
      send("a", "team-lead", "also fine", "ok-2"),
    ]);
    expect(results[1]).toBeInstanceOf(RuleViolationError);
    expect((results[1] as RuleViolationError).rule).toBe("known-recipient");
    expect(results[2]).toBeInstanceOf(KeyTaken);
    expect((await inboxOf("team-lead")).map((m) => m.text)).toEqual(["fine", "also fine"]);
    expect(await keysOf("a")).toEqual(["ok-1", "ok-2"]);

    // The retry, once "nobody" exists, is a new attempt: stored, not replayed.
    await insertMember(db(), t, "nobody");
    const sender = createSender(db(), DEFAULT_BACKLOG_LIMITS);
    const retried = await sender.send(send("a", "nobody", "lost", "late-1"));
    expect(retried.replayed).toBe(false);
    expect(await inboxOf("nobody")).toEqual([{ text: "lost", messageId: "late-1", seq: 1n }]);
  });

  it("10 concurrent retries of one keyed send among 54 other keyed sends: stored once, every retry gets its result", async () => {
    const { send, inboxOf } = await teamOf("a", "b");
    const sender = createSender(db(), DEFAULT_BACKLOG_LIMITS);
    const calls = Array.from({ length: 64 }, (_, i) =>
      i % 6 === 0 && i < 60
        ? sender.send(send("a", "b", "the one", "same"))
        : sender.send(send("b", "team-lead", `other ${i}`, `b-${i}`)),
    );
    const results = await Promise.all(calls);
    const same = results.filter((_, i) => i % 6 === 0 && i < 60);
    expect(same).toHaveLength(10);
    const stored = same.filter((r) => !r.replayed);
    expect(stored).toHaveLength(1);
    for (const r of same) expect(r.deliveries).toEqual(stored[0]?.deliveries);
    expect(await inboxOf("b")).toEqual([{ text: "the one", messageId: "same", seq: 1n }]);
    const lead = await inboxOf("team-lead");
    expect(lead.map((m) => m.seq)).toEqual(Array.from({ length: 54 }, (_, i) => BigInt(i + 1)));
  });
});
