import type { AppOptions } from "../../server/app.js";
import { migrate } from "../../server/store/migrate.js";
import { createPgDatabase, type PgDatabaseOptions } from "../../server/store/pg-database.js";
import { createScratchPgDatabase } from "./databases.js";
import { startTestEnv, type TestEnv } from "./harness.js";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.js";

/**
 * The app in-process on a scratch PostgreSQL database reached through a TCP proxy, so that a
 * test can make the database really go away (cut the proxy) and come back.
 */
export interface ProxiedPostgresEnv {
  env: TestEnv & { close(): Promise<void> };
  proxy: TcpProxy;
  /** Closes the app, its database and the proxy, and drops the scratch database. */
  close(): Promise<void>;
}

export async function startBehindProxy(
  options: Partial<AppOptions> = {},
  /** The driver's timeouts, for a test that waits for one of them. */
  dbOptions: Pick<PgDatabaseOptions, "statementTimeoutMs"> = {},
): Promise<ProxiedPostgresEnv> {
  const scratch = await createScratchPgDatabase();
  const direct = new URL(scratch.url);
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(scratch.url);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(proxy.port);
  const db = createPgDatabase({ connectionString: viaProxy.toString(), poolSize: 5, ...dbOptions });
  await migrate(db);
  const env = await startTestEnv(
    "postgres",
    { db, url: viaProxy.toString(), dispose: () => db.close() },
    options,
  );
  return {
    env,
    proxy,
    async close() {
      await env.close();
      await env.db.close();
      await proxy.close();
      await scratch.drop();
    },
  };
}
