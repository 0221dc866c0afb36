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
];

/**
 * Whether an error means "the database cannot be reached right now" (retry later) rather
 * than a bug: connection failures (class 08), shutdown or crash of the server (57P0x),
 * too many connections (53300), serialization conflicts are not included.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = sqlState(err);
  if (code !== undefined) {
    if (code.startsWith("08") || code.startsWith("57P") || code === "53300") return true;
    if (unavailableSystemCodes.has(code)) return true;
  }
  const message = err instanceof Error ? err.message : "";
  return unavailableMessages.some((m) => message.includes(m));
}

/** The refusal a driver error stands for, if it is one the caller can act on. */
export function classifyDriverError(err: unknown): Refusal | undefined {
  if (isDatabaseUnavailable(err)) return "unavailable";
  return undefined;
}
