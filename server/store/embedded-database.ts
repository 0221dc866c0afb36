import { mkdir } from "node:fs/promises";
import { PGlite, type Transaction, types } from "@electric-sql/pglite";
import { lockDataDir } from "./data-dir-lock.js";
import type { Database } from "./database.js";

export interface EmbeddedDatabaseOptions {
  /** Folder for the data files; omitted: in memory (tests). */
  dataDir?: string;
  /**
   * A data folder to start from, as `dumpDataDir()` wrote it (a tarball). Tests open a
   * migrated copy this way in about 0.35 s instead of 2–3 s for a fresh initdb.
   */
  loadDataDir?: Blob;
}

/**
 * The embedded PostgreSQL (PGlite, PostgreSQL compiled to WebAssembly), so the service runs
 * with nothing installed. One backend: statements run one at a time, transactions are
 * serialised by PGlite's own mutex.
 *
 * Nothing in PGlite stops two processes from opening one folder (which would corrupt it),
 * so the folder is locked for as long as the database is open.
 */
export interface EmbeddedDatabase extends Database {
  /** The whole data folder as a tarball, for `loadDataDir` (the tests' migrated template). */
  dumpDataDir(): Promise<Blob>;
}

export async function openEmbeddedDatabase(
  options: EmbeddedDatabaseOptions,
): Promise<EmbeddedDatabase> {
  let release: (() => Promise<void>) | undefined;
  if (options.dataDir !== undefined) {
    await mkdir(options.dataDir, { recursive: true });
    release = await lockDataDir(options.dataDir);
  }
  let db: PGlite;
  try {
    db = await PGlite.create({
      ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
      ...(options.loadDataDir !== undefined ? { loadDataDir: options.loadDataDir } : {}),
      parsers: { [types.INT8]: (value: string) => BigInt(value) },
    });
  } catch (err) {
    await release?.();
    throw err;
  }

  return {
    kind: "embedded",
    async query<R extends object>(sql: string, params?: unknown[]) {
      return (await db.query<R>(sql, params)).rows;
    },
    transaction<T>(fn: (tx: { query: Database["query"] }) => Promise<T>) {
      return db.transaction((tx: Transaction) =>
        fn({
          async query<R extends object>(sql: string, params?: unknown[]) {
            return (await tx.query<R>(sql, params)).rows;
          },
        }),
      );
    },
    async ping() {
      await db.query("SELECT 1");
    },
    dumpDataDir: () => db.dumpDataDir("none"),
    async close() {
      await db.close();
      await release?.();
    },
  };
}
