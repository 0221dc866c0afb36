import pg from "pg";
import type { DatabaseHost } from "./database-url.js";
import { findWritablePrimary } from "./find-primary.js";

/** The pool of one primary; replaced as a whole when that server stops being the primary. */
export interface PrimaryConnection {
  readonly pool: pg.Pool;
  readonly host: DatabaseHost;
  /** Which pool this is (1, 2, ...): a late error of an old pool must not drop a new one. */
  readonly generation: number;
}

export interface PrimaryPoolOptions {
  hosts: readonly DatabaseHost[];
  /** Everything of the pool but where it connects to. */
  pool: Omit<pg.PoolConfig, "connectionString">;
  /** The probing connections of a search: a host that has not answered by then is down. */
  connectTimeoutMs: number;
  /** Settings of the probing connections besides the timeout (TCP keepalive). */
  probeClient?: Omit<pg.ClientConfig, "connectionString">;
  /**
   * After a search found no primary, calls fail at once for this long instead of each one
   * searching again: during a failover they are refused fast (Unavailable) and the hosts are
   * not flooded with probes.
   */
  retryAfterMs: number;
  /** A primary was found (the first, or another one after a failover or switchover). */
  onPrimary?(host: DatabaseHost, previous: DatabaseHost | undefined): void;
  /** The pool of `host` was dropped because of `error`. */
  onLost?(host: DatabaseHost, error: unknown): void;
}

export interface PrimaryPool {
  /**
   * The writable primary's pool, searched for first when none is known. `fresh`: search
   * even within the pause after a failed search (health checks: they must see a primary
   * that is back at once, and run one at a time anyway).
   */
  acquire(options?: { fresh?: boolean }): Promise<PrimaryConnection>;
  /**
   * `connection` showed that its server is no longer the writable primary (see
   * isPrimaryGone): its pool is dropped, and the next acquire() searches again.
   */
  lost(connection: PrimaryConnection, error: unknown): void;
  /** Calls `fn` whenever a primary other than the last one is found. Returns an unsubscribe. */
  onSwitch(fn: (host: DatabaseHost) => void): () => void;
  /** The current primary's pool counts (all 0 while none is known), for /metrics. */
  connections(): { total: number; idle: number; waiting: number };
  /** Ends every pool, waiting for statements in flight. */
  close(): Promise<void>;
}

/**
 * A connection pool that always talks to the writable primary among several hosts, so a
 * failover or switchover of the database (pg_auto_failover) is followed without a restart.
 * One search runs at a time; the calls that arrive meanwhile wait for it. Nothing here
 * retries a statement: whether a statement cut by a failover took effect is unknown, and
 * only the caller can tell whether running it again is safe (a send with a message_id is).
 */
export function createPrimaryPool(options: PrimaryPoolOptions): PrimaryPool {
  let current: PrimaryConnection | undefined;
  let lastHost: DatabaseHost | undefined;
  let generation = 0;
  let searching: Promise<PrimaryConnection> | undefined;
  let failed: { at: number; error: unknown } | undefined;
  let closed = false;
  const ending = new Set<Promise<void>>();
  const switchListeners = new Set<(host: DatabaseHost) => void>();

  const retire = (pool: pg.Pool) => {
    // end() waits for the clients checked out of it: their transactions finish or fail on
    // their own, and each is released (destroyed when broken) by its user.
    const done = pool.end().catch(() => {});
    ending.add(done);
    void done.finally(() => ending.delete(done));
  };

  const search = async (): Promise<PrimaryConnection> => {
    const host = await findWritablePrimary(options.hosts, {
      connectTimeoutMs: options.connectTimeoutMs,
      client: options.probeClient,
    });
    const pool = new pg.Pool({ ...options.pool, connectionString: host.url });
    // An idle client losing its connection (a restart, a failover) must not crash the
    // process; the pool drops it, and the next error seen in use drops the whole pool.
    pool.on("error", () => {});
    if (closed) {
      await pool.end();
      throw new Error("Cannot use a pool after calling end on the pool");
    }
    const found = { pool, host, generation: ++generation };
    current = found;
    failed = undefined;
    const previous = lastHost;
    lastHost = host;
    options.onPrimary?.(host, previous);
    if (previous !== undefined && previous.url !== host.url) {
      for (const fn of [...switchListeners]) fn(host);
    }
    return found;
  };

  return {
    acquire(how = {}) {
      if (current) return Promise.resolve(current);
      if (closed)
        return Promise.reject(new Error("Cannot use a pool after calling end on the pool"));
      if (searching) return searching;
      if (!how.fresh && failed && Date.now() - failed.at < options.retryAfterMs) {
        return Promise.reject(failed.error);
      }
      searching = search()
        .catch((error: unknown) => {
          failed = { at: Date.now(), error };
          throw error;
        })
        .finally(() => {
          searching = undefined;
        });
      return searching;
    },
    connections() {
      const pool = current?.pool;
      return pool
        ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
        : { total: 0, idle: 0, waiting: 0 };
    },
    lost(connection, error) {
      if (current?.generation !== connection.generation) return; // already replaced
      current = undefined;
      options.onLost?.(connection.host, error);
      retire(connection.pool);
    },
    onSwitch(fn) {
      switchListeners.add(fn);
      return () => switchListeners.delete(fn);
    },
    async close() {
      closed = true;
      await searching?.catch(() => {});
      if (current) retire(current.pool);
      current = undefined;
      await Promise.all([...ending]);
    },
  };
}
