import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPgDatabase } from "../../server/store/pg-database.js";
import { createScratchPgDatabase } from "../support/databases.js";
import type { TestEnv } from "../support/harness.js";
import { inbox, text } from "../support/protocol-helpers.js";
import { type ProxiedPostgresEnv, startBehindProxy } from "../support/proxied-postgres.js";
import type { TcpProxy } from "../support/tcp-proxy.js";
import { waitFor } from "../support/wait.js";

/**
 * PostgreSQL goes away under a running server (a proxy in front of it is cut) and comes
 * back. Calls fail fast with Unavailable, the process stays up, and service resumes by
 * itself with nothing lost.
 */
describe.skipIf(inject("pgAdminUrl") === "")("database outage [postgres]", () => {
  let proxied: ProxiedPostgresEnv;
  let proxy: TcpProxy;
  let env: TestEnv & { close(): Promise<void> };

  beforeAll(async () => {
    proxied = await startBehindProxy({ heartbeatIntervalMs: 200 });
    ({ env, proxy } = proxied);
  });

  afterAll(async () => {
    await proxied?.close();
  });

  it("answers Unavailable within a 3 s client deadline while the database is down (never waits it out), and resumes by itself with nothing lost", async () => {
    const t = await env.team("alice");
    const alice = t.member("alice").client;
    for (let i = 1; i <= 3; i++) await t.lead.send({ to: "alice", message: text(`before ${i}`) });

    await proxy.cut();
    // Fast: each call is answered Unavailable within a client deadline of a few seconds; a
    // server that waited for the database (retrying, or queued on the pool) would let the
    // deadline pass and the client would see DeadlineExceeded instead.
    const deadline = { timeoutMs: 3_000 };
    for (const call of [
      () => t.lead.send({ to: "alice", message: text("during") }, deadline),
      () => alice.readInbox({}, deadline),
      () => t.lead.listMembers({}, deadline),
    ]) {
      const err = await call().then(
        () => undefined,
        (e) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.Unavailable);
      expect(err?.rawMessage).toMatch(/database is unavailable/);
    }

    await proxy.restore();
    // Service resumes without a restart: the pool reconnects on the next call.
    await waitFor(
      "a send to succeed again",
      () =>
        t.lead.send({ to: "alice", message: text("after") }).then(
          () => true,
          () => false,
        ),
      { intervalMs: 100 },
    );
    const texts = (await inbox(alice)).map((e) => e.message?.kind.value);
    expect(texts).toEqual(["before 1", "before 2", "before 3", "after"]);
  });

  it("commits with synchronous_commit on, even where the database's default is off", async () => {
    const scratch = await createScratchPgDatabase();
    try {
      const name = new URL(scratch.url).pathname.slice(1);
      const admin = createPgDatabase({ connectionString: scratch.url, poolSize: 1 });
      await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
      await admin.close();
      const db = createPgDatabase({ connectionString: scratch.url, poolSize: 2 });
      try {
        expect(await db.query("SHOW synchronous_commit")).toEqual([{ synchronous_commit: "on" }]);
        const inTx = await db.transaction((tx) => tx.query("SHOW synchronous_commit"));
        expect(inTx).toEqual([{ synchronous_commit: "on" }]);
      } finally {
        await db.close();
      }
    } finally {
      await scratch.drop();
    }
  });
});
