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

export interface Database extends Queryable {
  /** "postgres" for a server reached through DATABASE_URL, "embedded" for PGlite. */
  readonly kind: "postgres" | "embedded";
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws.
   * All statements of `fn` must go through the `tx` it is given.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs a cheap statement to check the database answers. */
  ping(): Promise<void>;
  /** Closes every connection; waits for running statements. */
  close(): Promise<void>;
}
