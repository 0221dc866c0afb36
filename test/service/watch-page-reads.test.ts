import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../server/store/database.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { watch } from "../support/team-watch.js";

/**
 * What opening many WatchTeam feeds at once makes the database do: each feed's first page is
 * a small one (32 KiB of bodies, as Subscribe's), and at most 4 page reads run at once, the
 * rest waiting their turn. Before, 640 feeds opened together each read a 1 MiB page at the
 * same moment (bench:hostile watch-observers: +200 MiB and the embedded server's event loop
 * held for minutes; on PostgreSQL the feeds queued for the pool and ended Unavailable).
 */

// The feed query's parameters: [teamId, since, upto, after, limit, maxBytes].
const FEED_SQL = /WITH picked AS/;

/** The database, with its feed page reads counted: how many at once, and their byte limits. */
function countingFeedReads(db: Database) {
  const seen = { inFlight: 0, maxInFlight: 0, maxBytes: [] as number[] };
  const wrapped = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== "query") {
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return async (sql: string, params?: unknown[]) => {
        if (!FEED_SQL.test(sql)) return target.query(sql, params);
        seen.inFlight++;
        seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
        seen.maxBytes.push(Number(params?.[5]));
        try {
          return await target.query(sql, params);
        } finally {
          seen.inFlight--;
        }
      };
    },
  });
  return { db: wrapped, seen };
}

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`WatchTeam page reads when many feeds open at once [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };
    let seen: ReturnType<typeof countingFeedReads>["seen"];
    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      const counting = countingFeedReads(testDb.db);
      seen = counting.seen;
      env = await startTestEnv(kind, { ...testDb, db: counting.db });
    });
    afterAll(async () => {
      await env?.close();
      await testDb?.dispose();
    });

    it("16 feeds opened together: each reads a 32 KiB first page, at most 4 reads at once, and every feed delivers the whole backlog", async () => {
      const t = await env.team("worker");
      const body = "x".repeat(8 * 1024);
      for (let i = 0; i < 20; i++)
        await t.lead.send({ to: "worker", message: text(`${i} ${body}`) });
      seen.maxBytes.length = 0;
      seen.maxInFlight = 0;
      const feeds = Array.from({ length: 16 }, () => watch(t.lead));
      for (const f of feeds) {
        await f.until(
          "the 20 messages",
          (w) => w.events().filter((e) => e.change.case === "envelope").length >= 20,
        );
      }
      for (const f of feeds) f.stop();
      await Promise.all(feeds.map((f) => f.ended));
      // Every feed's first read is at the smallest page; later ones grow as the client reads.
      expect(seen.maxBytes.filter((b) => b === 32 * 1024).length).toBeGreaterThanOrEqual(16);
      expect(seen.maxBytes.slice(0, 16).every((b) => b === 32 * 1024)).toBe(true);
      expect(seen.maxInFlight).toBeLessThanOrEqual(4);
      expect(seen.maxInFlight).toBeGreaterThan(0);
    });
  });
}
