import { execFile } from "node:child_process";
import { access, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { PGlite, type Transaction, types } from "@electric-sql/pglite";
import { lockDataDir } from "./data-dir-lock.js";
import type { Database, Transaction as StoreTransaction } from "./database.js";

export interface EmbeddedDatabaseOptions {
  /** Folder for the data files; omitted: in memory (tests). */
  dataDir?: string;
  /**
   * A data folder to start from, as `dumpDataDir()` wrote it (a tarball). Tests open a
   * migrated copy this way in a fraction of the time a fresh initdb takes.
   */
  loadDataDir?: Blob;
  /**
   * PostgreSQL's shared_buffers. Default 16MB, against PostgreSQL's 128MB: the buffers are
   * WebAssembly memory that PGlite never returns, so the larger setting stays in an idle
   * embedded server's resident memory for good (docs/performance.md, Memory).
   */
  sharedBuffers?: string;
}

const initdbScript = fileURLToPath(new URL("./embedded-initdb.mjs", import.meta.url));

/** A new folder's cluster is made by a child process, which takes initdb's memory with it. */
async function initialiseInChild(dataDir: string): Promise<void> {
  try {
    await access(join(dataDir, "PG_VERSION"));
    return; // already a cluster
  } catch {}
  try {
    await promisify(execFile)(process.execPath, [initdbScript, dataDir]);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(
      `could not create the embedded database in ${dataDir}: ${stderr || (err as Error).message}`,
    );
  }
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
    if (options.dataDir !== undefined) await initialiseInChild(options.dataDir);
    db = await PGlite.create({
      postgresqlconf: [`shared_buffers=${options.sharedBuffers ?? "16MB"}`],
      ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
      ...(options.loadDataDir !== undefined ? { loadDataDir: options.loadDataDir } : {}),
      parsers: { [types.INT8]: (value: string) => BigInt(value) },
    });
  } catch (err) {
    await release?.();
    throw err;
  }

  // Statements and transactions of ours running or queued on the one backend (/metrics).
  let busy = 0;
  const counted = async <T>(work: () => Promise<T>): Promise<T> => {
    busy++;
    try {
      return await work();
    } finally {
      busy--;
    }
  };
  return {
    kind: "embedded",
    query<R extends object>(sql: string, params?: unknown[]) {
      return counted(async () => (await db.query<R>(sql, params)).rows);
    },
    transaction<T>(fn: (tx: StoreTransaction) => Promise<T>) {
      return counted(() =>
        db.transaction((tx: Transaction) =>
          fn({
            async query<R extends object>(sql: string, params?: unknown[]) {
              return (await tx.query<R>(sql, params)).rows;
            },
            // PGlite's exec sends the text as one simple query: several statements at once.
            async exec(script: string) {
              await tx.exec(script);
            },
          }),
        ),
      );
    },
    async ping() {
      await db.query("SELECT 1");
    },
    connections: () => ({ total: 1, idle: busy === 0 ? 1 : 0, waiting: Math.max(0, busy - 1) }),
    dumpDataDir: () => db.dumpDataDir("none"),
    async close() {
      await db.close();
      await release?.();
    },
  };
}
