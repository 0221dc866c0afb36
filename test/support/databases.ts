import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import type { Database } from "../../server/store/database.js";
import { openEmbeddedDatabase } from "../../server/store/embedded-database.js";
import { createPgDatabase } from "../../server/store/pg-database.js";
import { adminQuery, readEmbeddedTemplate } from "./database-templates.js";

export type DatabaseKind = "embedded" | "postgres";

/**
 * The kinds this run covers: both, or only the embedded one when PostgreSQL is absent.
 * TEST_DATABASE_KINDS=postgres skips the embedded kind: the mutation run
 * (vitest.mutation.config.ts) sets it, since a mutant of the protocols behaves the same on
 * both and each test file would otherwise start a PGlite of its own for every mutant.
 */
export function databaseKinds(): { kind: DatabaseKind; skip: boolean }[] {
  const only = process.env.TEST_DATABASE_KINDS;
  if (only !== undefined && only !== "postgres") {
    throw new Error(`TEST_DATABASE_KINDS may only be "postgres" (got "${only}")`);
  }
  const noPostgres = inject("pgAdminUrl") === "";
  if (only === "postgres" && noPostgres) {
    throw new Error("TEST_DATABASE_KINDS=postgres, but PostgreSQL is not reachable");
  }
  return [
    { kind: "embedded", skip: only === "postgres" },
    { kind: "postgres", skip: noPostgres },
  ];
}

export interface TestDatabase {
  db: Database;
  /** A connection URL for this database (postgres only), e.g. for a server child process. */
  url: string | undefined;
  /** Closes the database and, for postgres, drops it. */
  dispose(): Promise<void>;
}

/**
 * A PostgreSQL database of its own on the test server, dropped by drop(): empty, or a copy
 * of the run's migrated template when `from` is "template".
 */
export async function createScratchPgDatabase(
  from: "empty" | "template" = "empty",
): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject("pgAdminUrl");
  const name = `tp_test_${randomBytes(6).toString("hex")}`;
  const template = from === "template" ? ` TEMPLATE ${inject("pgTemplateDatabase")}` : "";
  await adminQuery(adminUrl, `CREATE DATABASE ${name}${template}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * A migrated database of the given kind that no other test file shares: a copy of the run's
 * template (see database-templates.ts), so no file pays for its own initdb and migrations.
 */
export async function openTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === "embedded") {
    const template = await readEmbeddedTemplate(inject("embeddedTemplatePath"));
    const db = await openEmbeddedDatabase({ loadDataDir: template });
    return { db, url: undefined, dispose: () => db.close() };
  }
  const scratch = await createScratchPgDatabase("template");
  const db = createPgDatabase({ connectionString: scratch.url, poolSize: 30 });
  return {
    db,
    url: scratch.url,
    async dispose() {
      await db.close();
      await scratch.drop();
    },
  };
}
