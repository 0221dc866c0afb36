import { expect, it } from "vitest";
import { DEFAULT_BACKLOG_LIMITS } from "../../server/domain/limits.js";
import type { Database } from "../../server/store/database.js";
import { readInbox } from "../../server/store/inbox.js";
import type { SendInput } from "../../server/store/send.js";
import { createSender } from "../../server/store/sender.js";
import { describeEachStore, type FixtureTeam, insertTeam } from "../support/sql-fixtures.js";

const body = (s: string) => new TextEncoder().encode(s);

/**
 * The real database, counting the statements sent outside a transaction and the
 * transactions begun: how a send reached it. Every statement still runs.
 */
function counting(db: Database) {
  const counts = { statements: 0, transactions: 0 };
  const counted: Database = {
    ...db,
    kind: db.kind,
    query: (sql, params) => {
      counts.statements++;
      return db.query(sql, params);
    },
    transaction: (fn) => {
      counts.transactions++;
      return db.transaction(fn);
    },
    ping: () => db.ping(),
    close: () => db.close(),
  };
  return { db: counted, counts };
}

describeEachStore("the store's one send()", (store) => {
  function sendsFrom(team: FixtureTeam, name: string) {
    const row = team.member(name);
    return (to: string, text: string, extra: Partial<SendInput> = {}): SendInput => ({
      teamId: row.teamId,
      sender: { id: row.id, name },
      to,
      kind: "text",
      body: body(text),
      ...extra,
    });
  }

  it("plain sends go by group commit: concurrent ones share statements, no transaction of their own", async () => {
    const t = await insertTeam(store(), ["a"]);
    const from = sendsFrom(t, "a");
    const { db, counts } = counting(store());
    const sender = createSender(db, DEFAULT_BACKLOG_LIMITS);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sender.send(from("team-lead", `m${i}`))),
    );
    // Concurrent sends have no order among them (two statements in flight may take the
    // inbox lock either way round); together they fill seqs 1..20.
    const seqs = results.flatMap((r) => r.deliveries.map((d) => Number(d.seq)));
    expect(seqs.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(counts.transactions).toBe(0);
    // Two go at once alone (two batches in flight); the other 18 share the next statement.
    expect(counts.statements).toBeLessThan(20);
    const stored = await readInbox(store(), t.lead.id, 0n, 100);
    expect(stored.map((m) => new TextDecoder().decode(m.body)).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => `m${i}`).sort(),
    );
  });

  it("keyed sends go by group commit too: concurrent ones share transactions; a retry takes one more, alone", async () => {
    const t = await insertTeam(store(), ["a"]);
    const from = sendsFrom(t, "a");
    const { db, counts } = counting(store());
    const sender = createSender(db, DEFAULT_BACKLOG_LIMITS);
    const keyed = (i: number) =>
      from("team-lead", `keyed ${i}`, {
        messageId: `k-${i}`,
        fingerprint: new Uint8Array(32).fill(i),
      });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => sender.send(keyed(i))));
    const seqs = results.flatMap((r) => r.deliveries.map((d) => Number(d.seq)));
    expect(seqs.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Two go at once alone (two batches in flight); the other 18 share the next transaction.
    expect(counts.transactions).toBeLessThan(20);
    expect(counts.statements).toBe(0);
    const before = counts.transactions;
    const again = await sender.send(keyed(7));
    expect(again).toEqual({ ...results[7], replayed: true });
    // The batch found the key taken; the send was decided again alone, against what is
    // committed.
    expect(counts.transactions - before).toBe(2);
  });

  it("a send with a hook or a journal line takes a transaction of its own", async () => {
    const t = await insertTeam(store(), ["a"]);
    const from = sendsFrom(t, "a");
    const { db, counts } = counting(store());
    const sender = createSender(db, DEFAULT_BACKLOG_LIMITS);
    let hookRan = 0;
    const plain = from("team-lead", "plain");
    await sender.send(
      from("team-lead", "hooked", {
        beforeCommit: async () => {
          hookRan++;
        },
      }),
    );
    await sender.send(
      from("team-lead", "journaled", {
        attempt: {
          teamId: plain.teamId,
          memberId: plain.sender.id,
          action: "text",
          outcome: "accepted",
        },
      }),
    );
    expect(hookRan).toBe(1);
    expect(counts.transactions).toBe(2);
    expect(counts.statements).toBe(0);
  });
});
