import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { createRequestWaiters } from "../../server/inbox/request-waiters.js";
import type { Database, Queryable } from "../../server/store/database.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { planRequest } from "../support/protocol-helpers.js";

/**
 * The real database, with a count of the statements that read one request's record (the
 * read AwaitRequest repeats). Nothing is faked: every statement still runs.
 */
function countingReads(db: Database, requestId: () => string | undefined) {
  let reads = 0;
  const count = (sql: string, params?: unknown[]) => {
    if (/WHERE r\.id = \$1 AND r\.team_id = \$2/.test(sql) && params?.[0] === requestId()) {
      reads++;
    }
  };
  const wrap = <Q extends Queryable>(q: Q): Q => ({
    ...q,
    query(sql: string, params?: unknown[]) {
      count(sql, params);
      return q.query(sql, params);
    },
  });
  const counted: Database = {
    ...db,
    kind: db.kind,
    query: (sql, params) => wrap(db).query(sql, params),
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    ping: () => db.ping(),
    close: () => db.close(),
  };
  if (db.listen) counted.listen = db.listen.bind(db);
  return { db: counted, reads: () => reads };
}

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`AwaitRequest waits without polling [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };
    let watched: string | undefined;
    let reads: () => number;
    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      const counting = countingReads(testDb.db, () => watched);
      reads = counting.reads;
      env = await startTestEnv(kind, { ...testDb, db: counting.db });
    });
    afterAll(async () => {
      await env?.close();
      await testDb?.dispose();
    });

    it("a waiter reads the record once when it starts and once when it ends, however long it waits", async () => {
      const t = await env.team("alice");
      const sent = await t.member("alice").client.send({
        to: "team-lead",
        message: planRequest("step 1"),
      });
      watched = sent.requestId;
      const before = reads();
      // 2.5 s: a re-read every second (the old fallback for other replicas) reads 4 times.
      const got = await t.lead.awaitRequest({
        requestId: sent.requestId,
        timeout: { seconds: 2n, nanos: 500_000_000 },
      });
      expect(got.request?.status).toBe(RequestStatus.PENDING);
      expect(reads() - before).toBe(2);
    });
  });
}

describe("request waiters", () => {
  it("notifyAll wakes every waiter (events from other replicas may have been missed)", async () => {
    const waiters = createRequestWaiters();
    const signal = new AbortController().signal;
    const woken: string[] = [];
    const a = waiters.wait("req_a", 60_000, signal).then(() => woken.push("a"));
    const b = waiters.wait("req_b", 60_000, signal).then(() => woken.push("b"));
    waiters.notifyAll();
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(["a", "b"]);
  });
});
