import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import type { Database } from "../../server/store/database.js";
import { openEmbeddedDatabase } from "../../server/store/embedded-database.js";
import { migrate } from "../../server/store/migrate.js";
import { createPgDatabase } from "../../server/store/pg-database.js";

export type DatabaseKind = "embedded" | "postgres";

/** The kinds this run covers: both, or only the embedded one when PostgreSQL is absent. */
export function databaseKinds(): { kind: DatabaseKind; skip: boolean }[] {
  return [
    { kind: "embedded", skip: false },
    { kind: "postgres", skip: inject("pgAdminUrl") === "" },
  ];
}

export interface TestDatabase {
  db: Database;
  /** A connection URL for this database (postgres only), e.g. for a server child process. */
  url: string | undefined;
  /** Closes the database and, for postgres, drops it. */
  dispose(): Promise<void>;
}

/** A fresh, empty PostgreSQL database on the test server; dropped by dispose(). */
export async function createScratchPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject("pgAdminUrl");
  const name = `tp_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A migrated database of the given kind that no other test file shares. */
export async function openTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === "embedded") {
    const db = await openEmbeddedDatabase({});
    await migrate(db);
    return { db, url: undefined, dispose: () => db.close() };
  }
  const scratch = await createScratchPgDatabase();
  const db = createPgDatabase({ connectionString: scratch.url, poolSize: 30 });
  await migrate(db);
  return {
    db,
    url: scratch.url,
    async dispose() {
      await db.close();
      await scratch.drop();
    },
  };
}
