/**
 * The store seam: the one interface every store operation is written against, so the
 * same SQL runs on a real PostgreSQL (pg) and on the embedded one (PGlite).
 *
 * Both drivers return int8 as bigint, bytea as Uint8Array and timestamptz as Date, so
 * no code above this file sees a driver difference.
 */
export interface Queryable {
  /** Runs one parameterised statement and returns its rows. */
  query<R extends object = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

/**
 * A comment that starts a statement whose best plan depends on its parameters' values (a
 * search's words: a word in six messages and one in a third of them want opposite plans).
 * The PostgreSQL store prepares other statements once per connection, and PostgreSQL then
 * plans them generically after five calls when that looks no costlier than the plans so far;
 * for a search that took a word in a third of the messages from 100 to 420 ms (a parallel scan
 * of every message instead of the reader's). A statement that starts with this is sent unnamed,
 * so each call is planned with its values. The embedded database plans every call so anyway.
 */
export const PLAN_EACH_CALL = "/* plan each call */";

/** The statements of one transaction (Database.transaction hands one to its callback). */
export interface Transaction extends Queryable {
  /**
   * Runs a script of several statements without parameters as one piece of text (the
   * simple query protocol on both drivers), so a statement may hold semicolons of its own,
   * as a plpgsql function body does. For migrations; anything with values uses query().
   */
  exec(script: string): Promise<void>;
}

export interface Database extends Queryable {
  /** "postgres" for a server reached through DATABASE_URL, "embedded" for PGlite. */
  readonly kind: "postgres" | "embedded";
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws.
   * All statements of `fn` must go through the `tx` it is given.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Subscribes to a notification channel (PostgreSQL LISTEN) on a dedicated connection
   * that reconnects by itself; `onReconnect` runs after each reconnection, since
   * notifications sent while it was down are lost. Only for "postgres": the embedded
   * database lives in one process, which has nobody to hear from.
   */
  listen?(channel: string, handlers: ListenHandlers): Promise<Listener>;
  /** Runs a cheap statement to check the database answers. */
  ping(): Promise<void>;
  /**
   * Connections now: in the pool, idle, and callers waiting for one (pg's Pool counts; the
   * embedded database is one backend, busy while a statement of ours runs).
   */
  connections(): { total: number; idle: number; waiting: number };
  /** Closes every connection; waits for running statements. */
  close(): Promise<void>;
}

export interface ListenHandlers {
  onNotification(payload: string): void;
  onReconnect(): void;
}

export interface Listener {
  close(): Promise<void>;
}
