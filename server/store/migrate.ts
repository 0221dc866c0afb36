import { readdir, readFile } from "node:fs/promises";
import type { Database } from "./database.js";

const migrationsDir = new URL("./migrations/", import.meta.url);

// Any constant works; it only has to be the same in every server process.
const MIGRATION_LOCK = 7_361_201_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The numbered migrations shipped with this build, in order. */
export async function loadMigrations(): Promise<Migration[]> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d{3}_.+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 3)),
      name: file.replace(/\.sql$/, ""),
      sql: await readFile(new URL(file, migrationsDir), "utf8"),
    })),
  );
}

/**
 * Applies every migration not yet applied, each in its own transaction (a migration that
 * fails leaves nothing of itself behind, and the server does not start). Safe when several
 * servers start at once: each transaction first takes one advisory lock, so they run one
 * after another and each sees what the previous one applied.
 *
 * Safe across a database failover too, although advisory locks are not replicated (the
 * new primary has never heard of this one): the lock is transaction-scoped and guards only
 * the transaction that applies the migration and records it in schema_migrations. A
 * failover cuts that transaction, so the lock, the migration and its record vanish
 * together, or all three committed (and were replicated with the commit). Nothing here
 * relies on the lock after its transaction; the next server to start takes it anew on the
 * new primary and finds schema_migrations as it is there. Standbys grant advisory locks as
 * well, but the pool only ever talks to the writable primary (store/primary-pool.ts).
 * Returns the versions it applied. `migrations` defaults to the ones shipped (tests give
 * their own).
 */
export async function migrate(db: Database, migrations?: Migration[]): Promise<number[]> {
  const applied: number[] = [];
  for (const migration of migrations ?? (await loadMigrations())) {
    const ran = await db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await tx.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version    integer PRIMARY KEY,
           name       text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const done = await tx.query("SELECT 1 FROM schema_migrations WHERE version = $1", [
        migration.version,
      ]);
      if (done.length > 0) return false;
      // The file whole, as one script: a statement may hold semicolons of its own.
      await tx.exec(migration.sql);
      await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
      return true;
    });
    if (ran) applied.push(migration.version);
  }
  return applied;
}
