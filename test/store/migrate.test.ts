import { readdir } from "node:fs/promises";
import { describe, expect, inject, it } from "vitest";
import type { Database } from "../../server/store/database.js";
import { openEmbeddedDatabase } from "../../server/store/embedded-database.js";
import { loadMigrations, type Migration, migrate } from "../../server/store/migrate.js";
import { createPgDatabase } from "../../server/store/pg-database.js";
import {
  createScratchPgDatabase,
  openTestDatabase,
  type TestDatabase,
} from "../support/databases.js";

const migrationsDir = new URL("../../server/store/migrations/", import.meta.url);

/** The tables the shipped migrations create, by name. */
function tablesCreatedBy(migrations: Migration[]): string[] {
  const names = migrations.flatMap((m) =>
    [...m.sql.matchAll(/^\s*CREATE TABLE\s+(?:IF NOT EXISTS\s+)?([a-z_][a-z0-9_]*)/gim)].map(
      (match) => (match[1] ?? "").toLowerCase(),
    ),
  );
  return [...new Set(names)].sort();
}

async function existingTables(db: Database, names: string[]): Promise<string[]> {
  const rows = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_name = ANY($1::text[])`,
    [names],
  );
  return rows.map((r) => r.table_name).sort();
}

async function migrationRows(db: Database): Promise<{ version: number; name: string }[]> {
  return db.query<{ version: number; name: string }>(
    "SELECT version, name FROM schema_migrations ORDER BY version",
  );
}

describe("loadMigrations", () => {
  it("numbers the migrations 1..n without gaps, from files named NNN_name.sql", async () => {
    const migrations = await loadMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.map((m) => m.version)).toEqual(
      Array.from({ length: migrations.length }, (_, i) => i + 1),
    );
    for (const m of migrations) {
      expect(m.name).toMatch(/^\d{3}_[a-z0-9_]+$/);
      expect(Number(m.name.slice(0, 3))).toBe(m.version);
      expect(m.sql.trim().length).toBeGreaterThan(0);
    }
    // loadMigrations skips files that do not match its pattern; none may be left behind.
    const sqlFiles = (await readdir(migrationsDir)).filter((f) => f.endsWith(".sql")).sort();
    for (const file of sqlFiles) expect(file).toMatch(/^\d{3}_[a-z0-9_]+\.sql$/);
    expect(sqlFiles).toEqual(migrations.map((m) => `${m.name}.sql`));
  });
});

describe("migrate on the embedded database", () => {
  it("applies every migration once, then nothing", async () => {
    const versions = (await loadMigrations()).map((m) => m.version);
    const db = await openEmbeddedDatabase({});
    try {
      expect(await migrate(db)).toEqual(versions);
      expect(await migrate(db)).toEqual([]);
      expect((await migrationRows(db)).map((r) => r.version)).toEqual(versions);
      const tables = tablesCreatedBy(await loadMigrations());
      expect(await existingTables(db, tables)).toEqual(tables);
    } finally {
      await db.close();
    }
  }, 60_000);
});

describe.skipIf(inject("pgAdminUrl") === "")("migrate on PostgreSQL", () => {
  it("4 servers migrating one fresh database at once: each version applied exactly once", async () => {
    const migrations = await loadMigrations();
    const versions = migrations.map((m) => m.version);
    const scratch = await createScratchPgDatabase();
    const pools: Database[] = Array.from({ length: 4 }, (_, i) =>
      createPgDatabase({
        connectionString: scratch.url,
        poolSize: 2,
        applicationName: `migrate-test-${i}`,
      }),
    );
    try {
      const results = await Promise.allSettled(pools.map((db) => migrate(db)));
      const failures = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
      expect(failures).toEqual([]);
      const applied = results.map((r) => (r.status === "fulfilled" ? r.value : []));
      // Between them the four applied each version once; nobody applied one twice.
      expect(applied.flat().sort((a, b) => a - b)).toEqual(versions);

      const [db, other] = pools as [Database, Database];
      const rows = await migrationRows(db);
      expect(rows).toEqual(migrations.map((m) => ({ version: m.version, name: m.name })));
      const tables = tablesCreatedBy(migrations);
      expect(tables.length).toBeGreaterThan(0);
      expect(await existingTables(db, tables)).toEqual(tables);

      expect(await migrate(other)).toEqual([]);
      expect((await migrationRows(db)).map((r) => r.version)).toEqual(versions);
    } finally {
      await Promise.allSettled(pools.map((db) => db.close()));
      await scratch.drop();
    }
  }, 60_000);
});

/** A fresh, empty database of each kind (no template: these tests bring their own migrations). */
const freshDatabases: { kind: string; skip: boolean; open(): Promise<TestDatabase> }[] = [
  {
    kind: "embedded",
    skip: false,
    async open() {
      const db = await openEmbeddedDatabase({});
      return { db, url: undefined, dispose: () => db.close() };
    },
  },
  {
    kind: "postgres",
    skip: inject("pgAdminUrl") === "",
    async open() {
      const scratch = await createScratchPgDatabase("empty");
      const db = createPgDatabase({ connectionString: scratch.url, poolSize: 2 });
      return {
        db,
        url: scratch.url,
        async dispose() {
          await db.close();
          await scratch.drop();
        },
      };
    },
  },
];

for (const fresh of freshDatabases) {
  describe.skipIf(fresh.skip)(`a migration runs whole, in one transaction [${fresh.kind}]`, () => {
    it("a plpgsql body over several lines, with semicolons at line ends, is one statement", async () => {
      const { db, dispose } = await fresh.open();
      try {
        const applied = await migrate(db, [
          {
            version: 1,
            name: "001_counted",
            sql: `-- A function whose body a split on line-ending semicolons would cut apart.
CREATE TABLE counted (x integer);

CREATE FUNCTION next_count() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  SELECT count(*) INTO n FROM counted;
  RETURN n + 1;
END
$$;

INSERT INTO counted VALUES (1), (2);
`,
          },
        ]);
        expect(applied).toEqual([1]);
        expect(await db.query("SELECT next_count() AS n")).toEqual([{ n: 3 }]);
      } finally {
        await dispose();
      }
    }, 60_000);

    it("a migration that fails part-way leaves nothing of itself, and is not recorded", async () => {
      const { db, dispose } = await fresh.open();
      try {
        const migrations: Migration[] = [
          { version: 1, name: "001_kept", sql: "CREATE TABLE kept (x integer);\n" },
          {
            version: 2,
            name: "002_broken",
            sql: "CREATE TABLE half_done (x integer);\nINSERT INTO no_such_table VALUES (1);\n",
          },
        ];
        await expect(migrate(db, migrations)).rejects.toThrow(/no_such_table/);
        expect(await existingTables(db, ["kept", "half_done"])).toEqual(["kept"]);
        expect(await migrationRows(db)).toEqual([{ version: 1, name: "001_kept" }]);
      } finally {
        await dispose();
      }
    }, 60_000);
  });
}

/**
 * Every column, constraint, index, function (with its body) and trigger the migrations made,
 * as text, in a stable order: what must come out the same on both databases.
 */
async function schemaSummary(db: Database): Promise<string[]> {
  const rows = await db.query<{ line: string }>(
    `SELECT line FROM (
       SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' ||
              is_nullable || ' ' || coalesce(column_default, '') || ' ' || is_identity AS line
       FROM information_schema.columns WHERE table_schema = current_schema()
       UNION ALL
       SELECT 'constraint ' || conrelid::regclass::text || ' ' || pg_get_constraintdef(oid)
       FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
         -- NOT NULL is in the column lines (PGlite's PostgreSQL also lists it here).
         AND contype <> 'n'
       UNION ALL
       SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
       UNION ALL
       SELECT 'function ' || pg_get_functiondef(oid)
       FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
       UNION ALL
       SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
     ) s ORDER BY line COLLATE "C"`,
  );
  return rows.map((r) => r.line);
}

describe.skipIf(inject("pgAdminUrl") === "")("the shipped migrations on both databases", () => {
  it("make the same schema on the embedded database as on PostgreSQL, function bodies included", async () => {
    const embedded = await openTestDatabase("embedded");
    const postgres = await openTestDatabase("postgres");
    try {
      const [e, p] = await Promise.all([schemaSummary(embedded.db), schemaSummary(postgres.db)]);
      expect(p.length).toBeGreaterThan(20);
      expect(e).toEqual(p);
      // The journal's guard is stored as written, over several lines.
      const guard = p.find((line) => line.includes("protocol_attempts_append_only()"));
      expect(guard?.split("\n").length).toBeGreaterThan(5);
    } finally {
      await embedded.dispose();
      await postgres.dispose();
    }
  }, 60_000);
});
