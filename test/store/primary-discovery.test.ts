import { Code } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toConnectError } from "../../server/interceptors/error-mapping.js";
import type { Database } from "../../server/store/database.js";
import { parseDatabaseUrl } from "../../server/store/database-url.js";
import { findWritablePrimary } from "../../server/store/find-primary.js";
import { createPgDatabase } from "../../server/store/pg-database.js";
import { UncertainCommitError } from "../../server/store/sql-errors.js";
import { freePort } from "../support/child-server.js";
import {
  type PrivatePostgres,
  privatePostgresUnavailable,
  startPrivatePostgres,
} from "../support/private-postgres.js";
import { eventually, waitFor } from "../support/wait.js";

/**
 * Finding and following the writable primary, against real servers: two PostgreSQL of this
 * file's own, one of which refuses writes (default_transaction_read_only, as a node that
 * pg_auto_failover has promoted but not yet opened for writes; a standby is read-only too).
 * Flipping which one is writable is what a failover looks like from the server's side.
 */

const unavailable = privatePostgresUnavailable();
const skip = unavailable !== undefined && process.env.CI !== "true";
if (skip) {
  process.stdout.write(
    `\n*** SKIPPING test/store/primary-discovery.test.ts: ${unavailable}.\n` +
      "*** It needs PostgreSQL server binaries (apt-get install postgresql); mandatory under CI=true.\n\n",
  );
}

async function sql<R extends object>(url: string, text: string): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows as R[];
  } finally {
    await c.end();
  }
}

/** Makes a server refuse (or take) writes in every session, as at a promotion or a demotion. */
async function setReadOnly(server: PrivatePostgres, readOnly: boolean): Promise<void> {
  await sql(
    server.url,
    `ALTER SYSTEM SET default_transaction_read_only = ${readOnly ? "on" : "off"}`,
  );
  await sql(server.url, "SELECT pg_reload_conf()");
  // pg_reload_conf() only signals: wait until a new session sees the setting.
  await waitFor(`a new session to see read-only ${readOnly}`, async () => {
    const [row] = await sql<{ default_transaction_read_only: string }>(
      server.url,
      "SHOW default_transaction_read_only",
    );
    return row?.default_transaction_read_only === (readOnly ? "on" : "off");
  });
}

const portOf = (db: Database) =>
  db.query<{ port: number }>("SELECT inet_server_port() AS port").then((r) => r[0]?.port);

describe.skipIf(skip)("the writable primary among several hosts", () => {
  let a: PrivatePostgres;
  let b: PrivatePostgres;

  beforeAll(async () => {
    if (unavailable) throw new Error(`${unavailable}: required under CI=true`);
    [a, b] = await Promise.all([startPrivatePostgres(), startPrivatePostgres()]);
    await setReadOnly(b, true);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const both = () => `postgres://postgres@127.0.0.1:${b.port},127.0.0.1:${a.port}/postgres`;

  it("discovery keeps the one host that takes writes, whatever the order, and names every host when none does", async () => {
    const dead = await freePort(); // nothing listens there: a machine that is gone
    const options = { connectTimeoutMs: 2_000 };
    for (const url of [
      `postgres://postgres@127.0.0.1:${a.port},127.0.0.1:${b.port}/postgres`,
      `postgres://postgres@127.0.0.1:${b.port},127.0.0.1:${dead},127.0.0.1:${a.port}/postgres`,
    ]) {
      const found = await findWritablePrimary(parseDatabaseUrl(url), options);
      expect(found.label).toBe(`127.0.0.1:${a.port}`);
    }
    const none = await findWritablePrimary(
      parseDatabaseUrl(`postgres://postgres@127.0.0.1:${b.port},127.0.0.1:${dead}/postgres`),
      options,
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(none?.message).toMatch(new RegExp(`127.0.0.1:${b.port} is read-only`));
    expect(none?.message).toMatch(new RegExp(`127.0.0.1:${dead}: .*ECONNREFUSED`));
    // A call meeting that is refused as Unavailable, not as an internal error.
    expect(toConnectError(none).code).toBe(Code.Unavailable);
  });

  it("the pool writes to the primary; when it turns read-only, that call fails with Unavailable and the next ones go to the new primary", async () => {
    const db = createPgDatabase({ connectionString: both(), poolSize: 3 });
    try {
      await db.query("CREATE TABLE IF NOT EXISTS moved (n int)");
      await db.query("INSERT INTO moved VALUES (1)");
      expect(await portOf(db)).toBe(a.port);
      await db.ping();

      // The failover: a read-only, b writable. b never got the table (no replication here).
      await setReadOnly(b, false);
      await setReadOnly(a, true);
      await sql(b.url, "CREATE TABLE IF NOT EXISTS moved (n int)");
      const cut = await db.query("INSERT INTO moved VALUES (2)").then(
        () => undefined,
        (e: unknown) => e,
      );
      // The write that met the read-only server is not retried by the store (its outcome is
      // the caller's to judge); the caller sees Unavailable.
      expect((cut as { code?: string })?.code).toBe("25006");
      expect(toConnectError(cut).code).toBe(Code.Unavailable);

      await db.query("INSERT INTO moved VALUES (3)");
      expect(await portOf(db)).toBe(b.port);
      await db.ping();
      expect(await sql<{ n: number }>(b.url, "SELECT n FROM moved")).toEqual([{ n: 3 }]);
      expect(await sql<{ n: number }>(a.url, "SELECT n FROM moved")).toEqual([{ n: 1 }]);
      // A transaction takes the same way.
      await db.transaction((tx) => tx.query("INSERT INTO moved VALUES (4)"));
      expect(await sql<{ n: number }>(b.url, "SELECT n FROM moved ORDER BY n")).toEqual([
        { n: 3 },
        { n: 4 },
      ]);
    } finally {
      await db.close();
      await setReadOnly(a, false);
      await setReadOnly(b, true);
    }
  });

  it("health: ping fails while the pool's server is read-only and no other host takes writes", async () => {
    const db = createPgDatabase({ connectionString: both(), poolSize: 2 });
    try {
      await db.ping();
      await setReadOnly(a, true);
      await expect(db.ping()).rejects.toThrow(/read-only/);
      // No writable host at all: refused at once, each host named.
      const err = await db.ping().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(err)).toMatch(/no writable primary found/);
      expect(toConnectError(err).code).toBe(Code.Unavailable);
      await setReadOnly(a, false);
      // Found again without a restart once a host takes writes (after the short pause in
      // which calls are refused without searching).
      await waitFor(
        "the database found again",
        () =>
          db.ping().then(
            () => true,
            () => false,
          ),
        { timeoutMs: 5_000, intervalMs: 50 },
      );
    } finally {
      await db.close();
      await setReadOnly(a, false);
    }
  });

  it("the listener follows the primary: after a switch it listens on the new one and says it may have missed events", async () => {
    const db = createPgDatabase({ connectionString: both(), poolSize: 2 });
    const received: string[] = [];
    let reconnected!: () => void;
    const onReconnect = new Promise<void>((resolve) => {
      reconnected = resolve;
    });
    const listener = await db.listen?.("moves", {
      onNotification: (p) => received.push(p),
      onReconnect: () => reconnected(),
    });
    try {
      const heard = (payload: string) =>
        waitFor(`the notification ${payload}`, () => received.includes(payload), {
          timeoutMs: 4_000,
        }).catch(() => false);
      await db.query("SELECT pg_notify('moves', 'on a')");
      expect(await heard("on a")).toBe(true);

      await setReadOnly(b, false);
      await setReadOnly(a, true);
      // The pool learns of the switch from a failed write; the listener follows it.
      await db.query("CREATE TEMP TABLE x (n int)").catch(() => {});
      expect(await portOf(db)).toBe(b.port);
      await onReconnect;
      await db.query("SELECT pg_notify('moves', 'on b')");
      expect(await heard("on b")).toBe(true);
    } finally {
      await listener?.close();
      await db.close();
      await setReadOnly(a, false);
      await setReadOnly(b, true);
    }
  });

  it("a commit whose wait for a synchronous standby is cancelled, or never answered, is not acknowledged: Unavailable", async () => {
    await sql(a.url, "CREATE TABLE IF NOT EXISTS waited (n int)");
    // A standby that never comes: every commit waits for it.
    await sql(a.url, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
    await sql(a.url, "SELECT pg_reload_conf()");
    const db = createPgDatabase({ connectionString: a.url, poolSize: 2, statementTimeoutMs: 300 });
    try {
      // 1. The wait is cancelled (an operator's pg_cancel_backend, a client's cancel): COMMIT
      // then "succeeds" with only a WARNING, committed here but maybe on no standby.
      const writing = db
        .transaction((tx) => tx.query("INSERT INTO waited VALUES (1)"))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await waitFor("a commit waiting for the standby, cancelled", async () => {
        const [row] = await sql<{ cancelled: boolean }>(
          a.url,
          `SELECT pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity
           WHERE wait_event = 'SyncRep' AND application_name = 'team-protocols'`,
        );
        return row?.cancelled === true;
      });
      const err = await writing;
      expect(err).toBeInstanceOf(UncertainCommitError);
      const mapped = toConnectError(err);
      expect(mapped.code).toBe(Code.Unavailable);
      expect(mapped.rawMessage).toMatch(/retry with the same message_id/);

      // 2. Nobody cancels: statement_timeout does not cover a COMMIT's wait (PostgreSQL
      // disables it before committing), so the client's own timeout ends the call.
      const hung = await db.query("INSERT INTO waited VALUES ($1)", [2]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(hung)).toMatch(/Query read timeout/);
      expect(toConnectError(hung).code).toBe(Code.Unavailable);

      // PostgreSQL did commit both here (the second shows once its wait is released): that
      // is why neither may be acknowledged, as a failover to a standby that never got them
      // would lose them.
      await sql(a.url, "ALTER SYSTEM RESET synchronous_standby_names");
      await sql(a.url, "SELECT pg_reload_conf()");
      await eventually(async () =>
        expect(await sql<{ n: number }>(a.url, "SELECT n FROM waited ORDER BY n")).toEqual([
          { n: 1 },
          { n: 2 },
        ]),
      );
    } finally {
      await sql(a.url, "ALTER SYSTEM RESET synchronous_standby_names");
      await sql(a.url, "SELECT pg_reload_conf()");
      await db.close();
    }
  });
});
