import type { Config } from "./config.js";
import type { Logger } from "./logger.js";
import type { Database } from "./store/database.js";
import { openEmbeddedDatabase } from "./store/embedded-database.js";
import { migrate } from "./store/migrate.js";
import { createPgDatabase } from "./store/pg-database.js";

/** Opens the configured database and brings its schema up to date. */
export async function openDatabase(
  config: Pick<Config, "databaseUrl" | "dataDir" | "dbPoolSize"> &
    Partial<Pick<Config, "dbStatementTimeoutMs" | "dbConnectTimeoutMs">>,
  logger?: Logger,
): Promise<{ db: Database; applied: number[] }> {
  const db = config.databaseUrl
    ? createPgDatabase({
        connectionString: config.databaseUrl,
        poolSize: config.dbPoolSize,
        statementTimeoutMs: config.dbStatementTimeoutMs,
        connectTimeoutMs: config.dbConnectTimeoutMs,
        logger,
      })
    : await openEmbeddedDatabase({ dataDir: config.dataDir });
  try {
    const applied = await migrate(db);
    return { db, applied };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}
