import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openEmbeddedDatabase } from "../../server/store/embedded-database.js";
import { migrate } from "../../server/store/migrate.js";
import { createPgDatabase } from "../../server/store/pg-database.js";

/**
 * Migrated databases made once per run, which every test file copies instead of migrating
 * its own: a PostgreSQL database cloned with `CREATE DATABASE … TEMPLATE`, and a PGlite data
 * folder loaded from a tarball (about 0.35 s against 2–3 s for a fresh embedded initdb).
 */
export interface DatabaseTemplates {
  /** The embedded template's tarball on disk. */
  embeddedTemplatePath: string;
  /** The PostgreSQL template database's name; "" when the PostgreSQL suite is skipped. */
  pgTemplateDatabase: string;
  /** Drops the PostgreSQL template and deletes the tarball. */
  dispose(): Promise<void>;
}

export async function createDatabaseTemplates(pgAdminUrl: string): Promise<DatabaseTemplates> {
  const folder = await mkdtemp(join(tmpdir(), "tp-test-templates-"));
  const embeddedTemplatePath = join(folder, "embedded.tar");
  const embedded = await openEmbeddedDatabase({});
  try {
    await migrate(embedded);
    const dump = await embedded.dumpDataDir();
    await writeFile(embeddedTemplatePath, Buffer.from(await dump.arrayBuffer()));
  } finally {
    await embedded.close();
  }

  let pgTemplateDatabase = "";
  if (pgAdminUrl !== "") {
    pgTemplateDatabase = `tp_template_${randomBytes(6).toString("hex")}`;
    await adminQuery(pgAdminUrl, `CREATE DATABASE ${pgTemplateDatabase}`);
    const url = new URL(pgAdminUrl);
    url.pathname = `/${pgTemplateDatabase}`;
    // Closed before any copy: CREATE DATABASE … TEMPLATE refuses a source with sessions.
    const db = createPgDatabase({ connectionString: url.toString(), poolSize: 1 });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
  }

  return {
    embeddedTemplatePath,
    pgTemplateDatabase,
    async dispose() {
      if (pgTemplateDatabase !== "") {
        await adminQuery(pgAdminUrl, `DROP DATABASE IF EXISTS ${pgTemplateDatabase} WITH (FORCE)`);
      }
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/** The embedded template as a Blob for `loadDataDir`, read once per worker process. */
let embeddedTemplate: Promise<Blob> | undefined;
export function readEmbeddedTemplate(path: string): Promise<Blob> {
  embeddedTemplate ??= readFile(path).then((bytes) => new Blob([bytes]));
  return embeddedTemplate;
}

export async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}
