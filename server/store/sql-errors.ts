import type { Refusal } from "../errors.js";

/**
 * Driver errors are interpreted here and nowhere else. pg and PGlite both expose the
 * SQLSTATE as `code`; a failed connection shows up as a Node system error code instead.
 */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

export const isUniqueViolation = (err: unknown): boolean => sqlState(err) === "23505";

/** Deadlock detected, or a serialization failure: the transaction did nothing; retry it. */
export const isRetryableConflict = (err: unknown): boolean =>
  sqlState(err) === "40P01" || sqlState(err) === "40001";

/**
 * The database cannot take this call now: no writable primary was found, or a commit's
 * outcome is unknown (see UncertainCommitError). Always Unavailable for the client.
 */
export class DatabaseUnavailableError extends Error {
  override readonly name: string = "DatabaseUnavailableError";
}

/**
 * A commit that may or may not have happened. PostgreSQL ends the wait for a synchronous
 * standby when the statement is cancelled (our statement_timeout, for one) and then reports
 * COMMIT as done with only a WARNING: the transaction is committed on the primary but may
 * not be on any standby, so a failover can still lose it. Acknowledging it would break the
 * promise; the client retries with its message_id instead, which stores it once.
 */
export class UncertainCommitError extends DatabaseUnavailableError {
  override readonly name = "UncertainCommitError";
}

const unavailableSystemCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
]);

const unavailableMessages = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error",
  "Cannot use a pool after calling end",
  "PGlite is closed",
  // pg's client-side query_timeout: the server did not answer (a silent partition).
  "Query read timeout",
];

/**
 * Whether an error means "the database cannot be reached right now" (retry later) rather
 * than a bug: connection failures (class 08), shutdown or crash of the server (57P0x),
 * too many connections (53300), a read-only server (25006: a standby, or a primary being
 * demoted); serialization conflicts are not included.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  const code = sqlState(err);
  if (code !== undefined) {
    if (code.startsWith("08") || code.startsWith("57P") || code === "53300") return true;
    if (code === READ_ONLY_TRANSACTION) return true;
    if (unavailableSystemCodes.has(code)) return true;
  }
  const message = err instanceof Error ? err.message : "";
  return unavailableMessages.some((m) => message.includes(m));
}

const READ_ONLY_TRANSACTION = "25006";
// admin_shutdown, crash_shutdown, cannot_connect_now (starting up, or shutting down).
const SERVER_GOING_AWAY = new Set(["57P01", "57P02", "57P03"]);

/**
 * Whether an error shows that the server a connection pool talks to is no longer the
 * writable primary (it is gone, restarting, or read-only now), so the pool must be replaced
 * by one to the primary found anew. A statement timeout or too many connections say nothing
 * about which server is the primary, and neither does a commit of unknown outcome.
 */
export function isPrimaryGone(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return false;
  const code = sqlState(err);
  if (code !== undefined) {
    if (code.startsWith("08") || SERVER_GOING_AWAY.has(code)) return true;
    if (code === READ_ONLY_TRANSACTION || unavailableSystemCodes.has(code)) return true;
  }
  const message = err instanceof Error ? err.message : "";
  return unavailableMessages.some((m) => message.includes(m));
}

/** The refusal a driver error stands for, if it is one the caller can act on. */
export function classifyDriverError(err: unknown): Refusal | undefined {
  if (isDatabaseUnavailable(err)) return "unavailable";
  return undefined;
}
