import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import type { Cleanups } from "./cleanup.js";
import { createScratchDatabase, type Target, withClient } from "./database-target.js";

/** One connection of the baseline loops. */
export interface SqlConnection {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

/** The PostgreSQL settings that decide what a durable commit costs. */
export interface PgSettings {
  version: string;
  synchronous_commit: string;
  fsync: string;
  wal_sync_method: string;
  shared_buffers: string;
}

/**
 * The database engine of the server under test, reached directly (no service in between),
 * with a scratch table: what one-row commits cost here is the limit every figure is
 * compared with.
 */
export interface BaselineDb {
  readonly kind: "postgres" | "embedded";
  /** The scratch table (its name is unique to this run). */
  readonly table: string;
  /** Where the table lives, for the report. */
  readonly where: string;
  /** A connection of its own (PostgreSQL) or a handle on the one backend (PGlite). */
  connect(): Promise<SqlConnection>;
  /** LISTENs on `channel` until the returned function is called. */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  settings(): Promise<PgSettings>;
}

const SETTINGS_SQL = `SELECT current_setting('server_version') AS version,
  current_setting('synchronous_commit') AS synchronous_commit,
  current_setting('fsync') AS fsync,
  current_setting('wal_sync_method') AS wal_sync_method,
  current_setting('shared_buffers') AS shared_buffers`;

// Shaped like a message row: an integer key, a short binary body, a timestamp default.
const createTableSql = (table: string) =>
  `CREATE TABLE ${table} (id bigserial PRIMARY KEY, inbox integer NOT NULL,
     body bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`;

/**
 * A scratch database on the server under test's PostgreSQL (dropped at the end). When
 * DATABASE_URL's role may not create databases, a scratch table in that database instead.
 * Embedded: a PGlite of its own in a folder under `workDir`.
 */
export async function openBaselineDb(
  target: Target,
  adminUrl: string | undefined,
  workDir: string,
  cleanups: Cleanups,
): Promise<BaselineDb> {
  const table = `bench_baseline_${randomBytes(4).toString("hex")}`;
  if (target.kind === "embedded") return openPglite(join(workDir, "baseline"), table, cleanups);
  let url: string;
  let where: string;
  try {
    url = await createScratchDatabase(adminUrl ?? target.url, "tp_bench_baseline", cleanups);
    where = `scratch database ${new URL(url).pathname.slice(1)}`;
  } catch (err) {
    if (target.source !== "DATABASE_URL") throw err;
    url = target.url;
    where = `scratch table in the DATABASE_URL database (no CREATE DATABASE: ${(err as Error).message})`;
    cleanups.add(`drop scratch table ${table}`, async () => {
      await withClient(url, (c) => c.query(`DROP TABLE IF EXISTS ${table}`));
    });
  }
  await withClient(url, (c) => c.query(createTableSql(table)));
  return {
    kind: "postgres",
    table,
    where,
    async connect() {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
      await client.connect();
      return { query: (sql, params) => client.query(sql, params), close: () => client.end() };
    },
    async listen(channel, onNotify) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      client.on("notification", onNotify);
      await client.query(`LISTEN ${channel}`);
      return () => client.end();
    },
    settings: () =>
      withClient(url, async (c) => (await c.query<PgSettings>(SETTINGS_SQL)).rows[0] as PgSettings),
  };
}

async function openPglite(dataDir: string, table: string, cleanups: Cleanups): Promise<BaselineDb> {
  const db = await PGlite.create({ dataDir });
  cleanups.add("close the baseline PGlite", () => db.close());
  await db.exec(createTableSql(table));
  return {
    kind: "embedded",
    table,
    where: "PGlite in the bench process (same engine as the server's, a folder of its own)",
    // One backend: "connections" share it, and PGlite runs their statements one at a time.
    async connect() {
      return { query: (sql, params) => db.query(sql, params), close: async () => {} };
    },
    async listen(channel, onNotify) {
      return db.listen(channel, onNotify);
    },
    async settings() {
      const { rows } = await db.query<PgSettings>(SETTINGS_SQL);
      return rows[0] as PgSettings;
    },
  };
}
