import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMPTY_SNAPSHOT } from "../../server/domain/feed-cursor.js";
import type { Database } from "../../server/store/database.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { metricValue, scrapeMetrics } from "../support/metrics-scrape.js";
import { text } from "../support/protocol-helpers.js";
import { type Watcher, watch } from "../support/team-watch.js";
import { waitFor } from "../support/wait.js";

/**
 * What opening many WatchTeam feeds at once makes the database do: each feed's first page is
 * a small one (32 KiB of bodies, as Subscribe's), at most 4 page reads run at once, the
 * rest waiting their turn, and feeds of one team that ask for the same page while a read of
 * it waits share that read (feed-page-share.ts). Before, 640 feeds opened together each read a 1 MiB page at the
 * same moment (bench:hostile watch-observers: +200 MiB and the embedded server's event loop
 * held for minutes; on PostgreSQL the feeds queued for the pool and ended Unavailable).
 */

// The feed query's parameters: [teamId, since, upto, after, limit, maxBytes].
const FEED_SQL = /WITH picked AS/;

/**
 * The database, with its feed page reads counted: how many at once, their byte limits, and
 * which were the first page of a feed from its start (the empty snapshot, no window yet). While `hold` is set, feed reads wait
 * for it to be cleared.
 */
function countingFeedReads(db: Database) {
  const seen = {
    inFlight: 0,
    maxInFlight: 0,
    maxBytes: [] as number[],
    firstPages: 0,
    firstPageBytes: [] as number[],
    hold: undefined as Promise<void> | undefined,
  };
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
        // A window's first page: no end snapshot yet (later pages of it carry one).
        if (params?.[1] === EMPTY_SNAPSHOT && params?.[2] === null) {
          seen.firstPages++;
          seen.firstPageBytes.push(Number(params?.[5]));
        }
        try {
          await seen.hold;
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

    /** The envelope seqs a feed delivered, in order. */
    const seqsOf = (w: Watcher) =>
      w
        .events()
        .flatMap((e) => (e.change.case === "envelope" ? [e.change.value.envelope?.seq] : []));

    async function teamWithBacklog(count: number) {
      const t = await env.team("worker");
      const body = "x".repeat(8 * 1024);
      for (let i = 0; i < count; i++)
        await t.lead.send({ to: "worker", message: text(`${i} ${body}`) });
      const [team] = await testDb.db.query<{ id: number }>("SELECT id FROM teams WHERE name = $1", [
        t.name,
      ]);
      return { t, teamId: Number(team?.id) };
    }

    it("16 feeds opened together: first pages of 32 KiB, at most 4 reads at once, and every feed delivers the whole backlog once, in order", async () => {
      const { t } = await teamWithBacklog(20);
      seen.maxBytes.length = 0;
      seen.maxInFlight = 0;
      seen.firstPages = 0;
      seen.firstPageBytes.length = 0;
      const feeds = Array.from({ length: 16 }, () => watch(t.lead));
      for (const f of feeds) {
        await f.until("the 20 messages", (w) => seqsOf(w).length >= 20);
      }
      for (const f of feeds) f.stop();
      await Promise.all(feeds.map((f) => f.ended));
      const all = Array.from({ length: 20 }, (_, i) => BigInt(i + 1));
      for (const f of feeds) expect(seqsOf(f)).toEqual(all);
      // A first read is at the smallest page; later ones grow as the client reads.
      expect(seen.firstPages).toBeGreaterThan(0);
      expect(seen.firstPageBytes.every((b) => b === 32 * 1024)).toBe(true);
      expect(seen.maxInFlight).toBeLessThanOrEqual(4);
      expect(seen.maxInFlight).toBeGreaterThan(0);
    });

    it("16 feeds of one team asking for their first page while reads wait share them: at most 5 reads of it, shown in team_watch_pages_total", async () => {
      const { t, teamId } = await teamWithBacklog(20);
      const url = env.server.url;
      const before = await scrapeMetrics(url);
      seen.firstPages = 0;
      let release = () => {};
      seen.hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      let feeds: Watcher[] = [];
      try {
        feeds = Array.from({ length: 16 }, () => watch(t.lead));
        // A stream asks for its page right after it registers, so all 16 have asked.
        await waitFor("16 open feeds", () => env.app.teams.countOfTeam(teamId) === 16);
      } finally {
        seen.hold = undefined;
        release();
      }
      for (const f of feeds) {
        await f.until("the 20 messages", (w) => seqsOf(w).length >= 20);
      }
      for (const f of feeds) f.stop();
      await Promise.all(feeds.map((f) => f.ended));
      // At most the 4 reads that started (each held in the database) and the one that waited
      // for a place, which the other feeds joined.
      expect(seen.firstPages).toBeLessThanOrEqual(5);
      const all = Array.from({ length: 20 }, (_, i) => BigInt(i + 1));
      for (const f of feeds) expect(seqsOf(f)).toEqual(all);
      const after = await scrapeMetrics(url);
      const delta = (source: string) =>
        metricValue(after, "team_watch_pages_total", { source }) -
        metricValue(before, "team_watch_pages_total", { source });
      expect(delta("shared")).toBeGreaterThanOrEqual(16 - 5);
      expect(delta("database")).toBeGreaterThanOrEqual(seen.firstPages);
      // The streams closed: nothing of the shared pages is held.
      await waitFor(
        "no page bytes held",
        async () => metricValue(await scrapeMetrics(url), "team_watch_page_bytes_held") === 0,
      );
    });
  });
}
