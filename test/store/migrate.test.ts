import { readdir } from "node:fs/promises";
import { describe, expect, inject, it } from "vitest";
import type { Database } from "../../server/store/database.js";
import { openEmbeddedDatabase } from "../../server/store/embedded-database.js";
import { loadMigrations, type Migration, migrate } from "../../server/store/migrate.js";
import { createPgDatabase } from "../../server/store/pg-database.js";
import { createScratchPgDatabase } from "../support/databases.js";

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
