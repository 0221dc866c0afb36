/**
 * The committed schema dump (server/store/schema.sql): what the migrations make, as
 * pg_dump prints it, so a schema change shows up in review as a diff of that file.
 *
 *   npm run check-schema   migrate a scratch database, dump it, compare: exit 1 on a difference
 *   npm run dump-schema    the same, but write the dump to server/store/schema.sql
 *
 * The scratch database is made on TEST_DATABASE_URL's server (default the tests' local
 * PostgreSQL, postgres://postgres@127.0.0.1:5432/postgres) and dropped afterwards. CI runs
 * the check (.ci/run).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { type Migration, migrate } from "../server/store/migrate.js";
import { createPgDatabase } from "../server/store/pg-database.js";

export const SCHEMA_FILE = fileURLToPath(new URL("../server/store/schema.sql", import.meta.url));

const DEFAULT_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

const HEADER = `-- The schema the migrations in server/store/migrations/ make, as pg_dump --schema-only
-- prints it (no owners, no privileges). Generated: do not edit. After changing a migration,
-- run \`npm run dump-schema\` and commit this file; CI's \`npm run check-schema\` fails
-- when it and the migrations disagree.
`;

/**
 * pg_dump's text without what changes from one run or machine to the next: the version
 * lines, the session settings, and the random key of the \restrict guard that newer point
 * releases print; blank lines squeezed.
 */
export function normalizeDump(dump: string): string {
  const kept = dump
    .split("\n")
    .filter(
      (line) =>
        !/^\\(un)?restrict\b/.test(line) &&
        !/^-- Dumped (from|by) /.test(line) &&
        !/^SET /.test(line) &&
        !/^SELECT pg_catalog\.set_config/.test(line),
    );
  const body = kept
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return `${HEADER}\n${body}\n`;
}

/**
 * Migrates a new scratch database on the server at `adminUrl`, dumps its schema, drops it,
 * and returns the normalized dump. `migrations` defaults to the shipped ones.
 */
export async function dumpMigratedSchema(
  adminUrl: string,
  migrations?: Migration[],
): Promise<string> {
  const name = `tp_schema_${randomBytes(6).toString("hex")}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  try {
    const db = createPgDatabase({ connectionString: url.toString(), poolSize: 1 });
    try {
      await migrate(db, migrations);
    } finally {
      await db.close();
    }
    const { stdout } = await promisify(execFile)(
      "pg_dump",
      ["--schema-only", "--no-owner", "--no-privileges", `--dbname=${url.toString()}`],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    return normalizeDump(stdout);
  } finally {
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** `diff -u` of the committed dump and the fresh one (diffutils is on every Debian). */
async function differences(fresh: string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "tp-schema-"));
  const freshFile = join(folder, "schema.sql");
  try {
    await writeFile(freshFile, fresh);
    await promisify(execFile)("diff", ["-u", SCHEMA_FILE, freshFile]);
    return "";
  } catch (err) {
    return (err as { stdout?: string }).stdout ?? String(err);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const write = process.argv.includes("--write");
  const adminUrl = process.env.TEST_DATABASE_URL || DEFAULT_ADMIN_URL;
  const fresh = await dumpMigratedSchema(adminUrl);
  if (write) {
    await writeFile(SCHEMA_FILE, fresh);
    console.log("schema: wrote server/store/schema.sql");
    return;
  }
  const committed = await readFile(SCHEMA_FILE, "utf8").catch(() => "");
  if (committed === fresh) {
    console.log("schema: ok (server/store/schema.sql is what the migrations make)");
    return;
  }
  if (committed === "") {
    console.error("schema: server/store/schema.sql is missing; run `npm run dump-schema`");
    process.exit(1);
  }
  console.error(
    "schema: server/store/schema.sql differs from what the migrations make " +
      "(- committed, + migrations); run `npm run dump-schema` and commit it:\n" +
      (await differences(fresh)),
  );
  process.exit(1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    console.error(`schema: ${(err as Error).message}`);
    process.exit(1);
  });
}
