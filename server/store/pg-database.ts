import { createHash } from "node:crypto";
import pg from "pg";
import type { Logger } from "../logger.js";
import { type Database, PLAN_EACH_CALL, type Transaction } from "./database.js";
import { parseDatabaseUrl } from "./database-url.js";
import { probeReadOnly } from "./find-primary.js";
import { listenOn } from "./pg-listener.js";
import { createPrimaryPool } from "./primary-pool.js";
import { isPrimaryGone, isRetryableConflict, UncertainCommitError } from "./sql-errors.js";

/** What pg hands a 'notice' listener: PostgreSQL's NoticeResponse fields. */
type Notice = { severity?: string | undefined; message?: string | undefined };

const INT8_OID = 20;
const MAX_TX_ATTEMPTS = 3;

// int8 as bigint in every code path (pg's default is a string, PGlite's a number).
const typeParsers = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID) return (value: string) => BigInt(value);
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept the union.
    return pg.types.getTypeParser(oid, format as any);
  },
} as pg.CustomTypesConfig;

/** Defaults of the timeouts (README: "Surviving the loss of the database machine"). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
/** The client gives up this long after the server's own statement_timeout would have fired. */
const CLIENT_TIMEOUT_MARGIN_MS = 5_000;
/** An idle connection is probed (TCP keepalive) after this long without traffic. */
const KEEPALIVE_IDLE_MS = 10_000;
/** After a search found no writable primary, calls fail at once for this long. */
const RETRY_SEARCH_AFTER_MS = 250;

export interface PgDatabaseOptions {
  /** One host, or several (`postgres://h1:5432,h2:5433/db`): see store/database-url.ts. */
  connectionString: string;
  /** Connections in the pool. */
  poolSize?: number | undefined;
  /** Application name shown in pg_stat_activity. */
  applicationName?: string | undefined;
  /**
   * A statement running longer is cancelled by the server (statement_timeout), and the
   * client gives up on an answer a few seconds later: a silent network partition, or a
   * COMMIT waiting for a synchronous standby, which statement_timeout does not cover
   * (PostgreSQL disables it before committing).
   */
  statementTimeoutMs?: number | undefined;
  /** Connecting to a host (and asking whether it is the primary) gives up after this. */
  connectTimeoutMs?: number | undefined;
  /** Where primary switches are logged. */
  logger?: Logger | undefined;
}

/**
 * A real PostgreSQL, through a pool that talks to the writable primary among the URL's hosts
 * and follows it through a failover (store/primary-pool.ts).
 */
export function createPgDatabase(options: PgDatabaseOptions): Database {
  const hosts = parseDatabaseUrl(options.connectionString);
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const { logger } = options;
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
  // Keepalive both ways: ours finds a dead server under an idle connection; the server's
  // (tcp_keepalives_*) finds a dead server process of ours and ends its session, so row
  // locks of a transaction we can no longer finish are not held for ever. A transaction left
  // idle that long is ended too.
  const serverSettings = [
    // A Send returns only after its commit is flushed to disk (and, with a synchronous
    // standby, to the standby), whatever the database's default says.
    "synchronous_commit=on",
    `statement_timeout=${statementTimeoutMs}`,
    `idle_in_transaction_session_timeout=${statementTimeoutMs}`,
    `tcp_keepalives_idle=${seconds(KEEPALIVE_IDLE_MS)}`,
    "tcp_keepalives_interval=5",
    "tcp_keepalives_count=3",
  ];
  const keepalive = { keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS };
  const primary = createPrimaryPool({
    hosts,
    connectTimeoutMs,
    probeClient: keepalive,
    retryAfterMs: RETRY_SEARCH_AFTER_MS,
    pool: {
      ...keepalive,
      max: options.poolSize ?? 20,
      application_name: options.applicationName ?? "team-protocols",
      types: typeParsers,
      // Fail fast when the server is down instead of queueing callers for ever.
      connectionTimeoutMillis: connectTimeoutMs,
      query_timeout: statementTimeoutMs + CLIENT_TIMEOUT_MARGIN_MS,
      options: serverSettings.map((s) => `-c ${s}`).join(" "),
    },
    onPrimary(host, previous) {
      if (previous === undefined) {
        if (hosts.length > 1)
          logger?.info({ event: "db_primary", host: host.label }, "database primary found");
      } else if (previous.url !== host.url) {
        logger?.warn(
          { event: "db_primary_switched", host: host.label, previous: previous.label },
          `database primary is now ${host.label} (was ${previous.label})`,
        );
      }
    },
    onLost(host, err) {
      logger?.warn(
        { event: "db_primary_lost", host: host.label, err },
        `lost the database primary ${host.label}`,
      );
    },
  });

  const run = async <R extends object>(
    client: pg.PoolClient,
    sql: string,
    params?: unknown[],
  ): Promise<R[]> => {
    // Statements with parameters are prepared once per connection (named): parsing and
    // planning were most of the send batch's time per execution; but not those marked
    // PLAN_EACH_CALL (planned with their values each time). Statements without parameters
    // (BEGIN, migrations of several statements) go as simple queries.
    const result =
      params && params.length > 0 && !sql.startsWith(PLAN_EACH_CALL)
        ? await client.query({ name: statementName(sql), text: sql, values: params })
        : await client.query(sql, params);
    return result.rows as R[];
  };

  /**
   * Runs `fn` on a client of the primary's pool. Errors that show the primary is gone drop
   * the pool (the next call searches again); a connection that failed is destroyed, not
   * returned; a commit PostgreSQL reported with the synchronous-replication warning fails.
   */
  const withClient = async <T>(
    fn: (client: pg.PoolClient, state: { broken: boolean }) => Promise<T>,
    acquire: { fresh?: boolean } = {},
  ): Promise<T> => {
    const connection = await primary.acquire(acquire);
    let client: pg.PoolClient;
    try {
      client = await connection.pool.connect();
    } catch (err) {
      if (isPrimaryGone(err)) primary.lost(connection, err);
      throw err;
    }
    const state = { broken: false, uncertain: false };
    // pg-pool stops listening for a client's errors while it is checked out: a connection
    // lost mid-transaction (PostgreSQL restarting) would otherwise be an unhandled 'error'
    // event and end the process. The query in flight fails on its own; mark the client.
    const onError = () => {
      state.broken = true;
    };
    const onNotice = (notice: Notice) => {
      if (isSyncWaitCancelled(notice)) state.uncertain = true;
    };
    client.on("error", onError);
    client.on("notice", onNotice);
    try {
      const result = await fn(client, state);
      if (state.uncertain) {
        throw new UncertainCommitError(
          `${connection.host.label} committed without confirmation from a synchronous ` +
            "standby (the wait was cancelled): the outcome is unknown",
        );
      }
      return result;
    } catch (err) {
      if (isPrimaryGone(err)) {
        state.broken = true;
        primary.lost(connection, err);
      }
      throw err;
    } finally {
      client.removeListener("error", onError);
      client.removeListener("notice", onNotice);
      client.release(state.broken);
    }
  };

  const once = <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> =>
    withClient(async (client, state) => {
      const tx: Transaction = {
        query: (sql, params) => run(client, sql, params),
        // Text without parameters goes as one simple query, which may hold many statements.
        exec: async (script) => {
          await client.query(script);
        },
      };
      try {
        await client.query("BEGIN");
        const result = await fn(tx);
        await client.query("COMMIT");
        return result;
      } catch (err) {
        // On a connection that failed or timed out there is nothing to roll back: the
        // server aborts the transaction when the session ends.
        if (!state.broken && !isPrimaryGone(err)) {
          try {
            await client.query("ROLLBACK");
          } catch {
            state.broken = true; // the connection itself failed: do not return it to the pool
          }
        }
        throw err;
      }
    });

  return {
    kind: "postgres",
    query: (sql, params) => withClient((client) => run(client, sql, params)),
    async transaction(fn) {
      // A deadlock (two transactions locking the same rows in opposite orders) aborts one of
      // them before it took effect, so running it again is safe and invisible to the caller.
      // Nothing else is retried: a transaction cut by a lost connection may have committed.
      for (let attempt = 1; ; attempt++) {
        try {
          return await once(fn);
        } catch (err) {
          if (attempt >= MAX_TX_ATTEMPTS || !isRetryableConflict(err)) throw err;
        }
      }
    },
    listen: (channel, handlers) =>
      listenOn(
        {
          primary: async () => {
            const connection = await primary.acquire();
            return {
              host: connection.host,
              lost: (err: unknown) => {
                if (isPrimaryGone(err)) primary.lost(connection, err);
              },
            };
          },
          onSwitch: (fn) => primary.onSwitch(fn),
          client: { ...keepalive, connectionTimeoutMillis: connectTimeoutMs },
          checkIntervalMs: 5_000,
          checkTimeoutMs: connectTimeoutMs,
        },
        channel,
        handlers,
      ),
    async ping() {
      // Health: SERVING only while a writable primary answers. A server that turned
      // read-only under the pool (demoted, or promoted but not yet writable) drops the pool.
      await withClient(
        async (client) => {
          if (await probeReadOnly(client)) {
            // 25006 (read_only_sql_transaction), as a write there would fail: the pool goes.
            throw Object.assign(new Error("the database server is read-only now"), {
              code: "25006",
            });
          }
        },
        { fresh: true },
      );
    },
    connections: () => primary.connections(),
    async close() {
      await primary.close();
    },
  };
}

/**
 * The WARNING of a COMMIT whose wait for a synchronous standby was cancelled (a statement
 * timeout, pg_cancel_backend): "canceling wait for synchronous replication due to user
 * request". The transaction is then committed on this server only.
 */
function isSyncWaitCancelled(notice: Notice): boolean {
  return (
    notice.severity === "WARNING" && /wait for synchronous replication/i.test(notice.message ?? "")
  );
}

// Our SQL is static text, so there are few distinct statements: each gets a stable name.
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `tp_${createHash("sha1").update(sql).digest("hex").slice(0, 16)}`;
    statementNames.set(sql, name);
  }
  return name;
}
