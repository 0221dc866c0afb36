import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Cleanups } from "./cleanup.js";

/** Where `--pg` makes its scratch database when given no URL. */
export const DEFAULT_PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** The database the server under test uses. */
export type Target =
  | {
      kind: "postgres";
      /** How it was chosen, for the report. */
      source: "DATABASE_URL" | "--pg scratch database";
      /** The server's DATABASE_URL. */
      url: string;
    }
  | { kind: "embedded"; source: "PGlite, no DATABASE_URL" };

/**
 * `--pg [url]`: a scratch database on that PostgreSQL, dropped at the end; else DATABASE_URL
 * as given (the bench adds teams named bench-* to it); else the embedded database.
 */
export async function resolveTarget(
  options: { pg: string | undefined; databaseUrl: string | undefined },
  cleanups: Cleanups,
): Promise<Target> {
  if (options.pg !== undefined) {
    const url = await createScratchDatabase(options.pg, "tp_bench", cleanups);
    return { kind: "postgres", source: "--pg scratch database", url };
  }
  if (options.databaseUrl) {
    return { kind: "postgres", source: "DATABASE_URL", url: options.databaseUrl };
  }
  return { kind: "embedded", source: "PGlite, no DATABASE_URL" };
}

/**
 * Creates an empty database next to the one `adminUrl` names and registers its drop (FORCE:
 * a connection the bench failed to close must not keep it alive). Returns its URL.
 */
export async function createScratchDatabase(
  adminUrl: string,
  prefix: string,
  cleanups: Cleanups,
  keep = false,
): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  if (!keep)
    cleanups.add(`drop scratch database ${name}`, async () => {
      await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}
