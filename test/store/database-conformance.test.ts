import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, PLAN_EACH_CALL } from "../../server/store/database.js";
import { sqlState } from "../../server/store/sql-errors.js";
import { type DatabaseKind, databaseKinds, openTestDatabase } from "../support/databases.js";
import { eventually } from "../support/wait.js";

/**
 * The store seam's contract (server/store/database.ts), checked the same way on both
 * drivers, as River checks each of its drivers: every store module is written against this
 * interface alone, so whatever one driver does differently from the other shows up here
 * and not as a store bug on one engine only. Each case uses a table of its own.
 */
for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`the database seam (${kind})`, () => {
    let db: Database;
    let dispose: () => Promise<void>;
    let tables = 0;
    const table = async (columns: string) => {
      tables += 1;
      const name = `conformance_${tables}`;
      await db.query(`CREATE TABLE ${name} (${columns})`);
      return name;
    };

    beforeAll(async () => {
      const opened = await openTestDatabase(kind as DatabaseKind);
      db = opened.db;
      dispose = opened.dispose;
    });
    afterAll(() => dispose?.());

    it(`names its engine: ${kind}`, () => {
      expect(db.kind).toBe(kind);
    });

    it("returns int8 as bigint, beyond 2^53 exactly, and NULL as null", async () => {
      const t = await table("v int8");
      const big = 9_007_199_254_740_993n; // 2^53 + 1: a number would round it
      await db.query(`INSERT INTO ${t} (v) VALUES ($1), ($2), (NULL)`, [big, -1n]);
      const rows = await db.query<{ v: bigint | null }>(`SELECT v FROM ${t} ORDER BY v NULLS LAST`);
      expect(rows.map((r) => r.v)).toEqual([-1n, big, null]);
      expect(typeof rows[0]?.v).toBe("bigint");
      const [sum] = await db.query<{ s: bigint }>(`SELECT sum(v)::int8 AS s FROM ${t}`);
      expect(sum?.s).toBe(big - 1n);
    });

    it("returns bytea as Uint8Array, zero bytes and the empty value kept", async () => {
      const t = await table("v bytea");
      const bytes = new Uint8Array([0, 1, 0xff, 0, 0x7f]);
      await db.query(`INSERT INTO ${t} (v) VALUES ($1), ($2)`, [bytes, new Uint8Array()]);
      const rows = await db.query<{ v: Uint8Array }>(`SELECT v FROM ${t} ORDER BY length(v) DESC`);
      expect(rows[0]?.v).toBeInstanceOf(Uint8Array);
      expect([...(rows[0]?.v ?? [])]).toEqual([...bytes]);
      expect(rows[1]?.v).toBeInstanceOf(Uint8Array);
      expect(rows[1]?.v.length).toBe(0);
    });

    it("returns timestamptz as Date, to the millisecond, in and out", async () => {
      const t = await table("v timestamptz");
      const at = new Date("2026-12-03T14:50:01.234Z");
      await db.query(`INSERT INTO ${t} (v) VALUES ($1)`, [at]);
      const [row] = await db.query<{ v: Date; later: boolean }>(
        `SELECT v, v > $1::timestamptz - interval '1 millisecond' AS later FROM ${t}`,
        [at],
      );
      expect(row?.v).toBeInstanceOf(Date);
      expect(row?.v.toISOString()).toBe(at.toISOString());
      expect(row?.later).toBe(true);
    });

    it("keeps text as written (non-ASCII, quotes, a NUL-free emoji)", async () => {
      const t = await table("v text");
      const text = 'plan: «réécrire» l\'analyseur — 解析器 🚀 "quoted"';
      await db.query(`INSERT INTO ${t} (v) VALUES ($1)`, [text]);
      const [row] = await db.query<{ v: string }>(`SELECT v FROM ${t}`);
      expect(row?.v).toBe(text);
    });

    it("commits a transaction that resolves and hands back its value", async () => {
      const t = await table("v int4");
      const value = await db.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${t} (v) VALUES (1), (2)`);
        const [c] = await tx.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`);
        return c?.n;
      });
      expect(value).toBe(2n);
      const [c] = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`);
      expect(c?.n).toBe(2n);
    });

    it("rolls back a transaction that throws, rethrows its error, and stays usable", async () => {
      const t = await table("v int4");
      const thrown = new Error("the callback failed");
      await expect(
        db.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${t} (v) VALUES (1)`);
          throw thrown;
        }),
      ).rejects.toBe(thrown);
      const [c] = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`);
      expect(c?.n).toBe(0n);
      await db.transaction((tx) => tx.query(`INSERT INTO ${t} (v) VALUES (3)`));
      const [after] = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`);
      expect(after?.n).toBe(1n);
    });

    it("rolls back a transaction whose statement fails, with the SQLSTATE as code", async () => {
      const t = await table("v int4 PRIMARY KEY");
      const failure = await db
        .transaction(async (tx) => {
          await tx.query(`INSERT INTO ${t} (v) VALUES (1)`);
          await tx.query(`INSERT INTO ${t} (v) VALUES (1)`);
        })
        .catch((err: unknown) => err);
      expect(sqlState(failure)).toBe("23505");
      const [c] = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`);
      expect(c?.n).toBe(0n);
    });

    it("runs a script with semicolons inside a plpgsql body as one piece", async () => {
      const t = await table("v int4");
      await db.transaction((tx) =>
        tx.exec(`
          CREATE FUNCTION ${t}_double(x int4) RETURNS int4 LANGUAGE plpgsql AS $$
          BEGIN
            IF x IS NULL THEN RETURN 0; END IF;
            RETURN x * 2;
          END;
          $$;
          INSERT INTO ${t} (v) VALUES (${t}_double(21));
          INSERT INTO ${t} (v) VALUES (${t}_double(NULL));
        `),
      );
      const rows = await db.query<{ v: number }>(`SELECT v FROM ${t} ORDER BY v`);
      expect(rows.map((r) => r.v)).toEqual([0, 42]);
    });

    it("rolls back a script that fails halfway, its first statements too", async () => {
      const t = await table("v int4");
      await expect(
        db.transaction((tx) =>
          tx.exec(
            `INSERT INTO ${t} (v) VALUES (1); SELECT 1 / 0; INSERT INTO ${t} (v) VALUES (2);`,
          ),
        ),
      ).rejects.toMatchObject({ code: "22012" });
      const [c] = await db.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`);
      expect(c?.n).toBe(0n);
    });

    it("runs concurrent transactions one after another where they conflict: no update lost", async () => {
      const t = await table("id int4 PRIMARY KEY, n int4 NOT NULL");
      await db.query(`INSERT INTO ${t} (id, n) VALUES (1, 0)`);
      await Promise.all(
        Array.from({ length: 20 }, () =>
          db.transaction(async (tx) => {
            const [row] = await tx.query<{ n: number }>(
              `SELECT n FROM ${t} WHERE id = 1 FOR UPDATE`,
            );
            await tx.query(`UPDATE ${t} SET n = $1 WHERE id = 1`, [(row?.n ?? 0) + 1]);
          }),
        ),
      );
      const [row] = await db.query<{ n: number }>(`SELECT n FROM ${t} WHERE id = 1`);
      expect(row?.n).toBe(20);
    });

    it("answers ping and counts its connections", async () => {
      await db.ping();
      const c = db.connections();
      expect(c.total).toBeGreaterThanOrEqual(c.idle);
      expect(c.waiting).toBeGreaterThanOrEqual(0);
    });

    it("a statement marked PLAN_EACH_CALL runs with its parameters like any other", async () => {
      const rows = await db.query<{ v: number }>(`${PLAN_EACH_CALL} SELECT $1::int + 1 AS v`, [41]);
      expect(rows).toEqual([{ v: 42 }]);
    });

    if (kind === "postgres") {
      it("prepares a statement with parameters once per connection, but not one marked PLAN_EACH_CALL", async () => {
        // One transaction: one connection, whose prepared statements the view shows.
        const prepared = await db.transaction(async (tx) => {
          await tx.query("SELECT $1::int AS prepared_once", [1]);
          await tx.query(`${PLAN_EACH_CALL} SELECT $1::int AS planned_each_call`, [1]);
          return tx.query<{ statement: string }>(
            "SELECT statement FROM pg_prepared_statements WHERE statement LIKE $1",
            ["%AS p%"],
          );
        });
        const texts = prepared.map((r) => r.statement).join("\n");
        expect(texts).toContain("prepared_once");
        expect(texts).not.toContain("planned_each_call");
      });
    }

    if (kind === "embedded") {
      it("offers no LISTEN: one process has nobody to hear from", () => {
        expect(db.listen).toBeUndefined();
      });
    } else {
      it("hears a NOTIFY, and after its connection is killed reconnects, says so, and hears again", async () => {
        const listen = db.listen?.bind(db);
        if (!listen) throw new Error("a postgres database must offer listen");
        const heard: string[] = [];
        let reconnects = 0;
        const channel = `conformance_${Date.now()}`;
        const listener = await listen(channel, {
          onNotification: (payload) => heard.push(payload),
          onReconnect: () => {
            reconnects += 1;
          },
        });
        try {
          await db.query("SELECT pg_notify($1, $2)", [channel, "first"]);
          await eventually(() => expect(heard).toEqual(["first"]));
          await db.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'team-protocols-listen' AND datname = current_database()`,
          );
          await eventually(() => expect(reconnects).toBe(1), { timeoutMs: 15_000 });
          await db.query("SELECT pg_notify($1, $2)", [channel, "second"]);
          await eventually(() => expect(heard).toEqual(["first", "second"]));
        } finally {
          await listener.close();
        }
        await db.query("SELECT pg_notify($1, $2)", [channel, "after close"]);
        await db.ping();
        expect(heard).toEqual(["first", "second"]);
      });
    }
  });
}
