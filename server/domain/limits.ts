// The contract's limits, as DESIGN.md states them. Pure values: the rules table checks them,
// the config validates against them, handlers and the store rely on them.

/** Team and member names. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const MAX_TEXT_BYTES = 64 * 1024;
export const MAX_MESSAGE_ID_CHARS = 128;
export const MAX_PLAN_BYTES = 256 * 1024;
/** Reasons, feedback, summaries, errors: one paragraph's worth each. */
export const MAX_NOTE_BYTES = 16 * 1024;
/** A task's result may be long (it is what the lead reads). */
export const MAX_RESULT_BYTES = 256 * 1024;
/** A task's subject and active form: one line each (Claude Code shows them in a list). */
export const MAX_TASK_LINE_CHARS = 200;
/** Task ids one CreateTask or UpdateTask may name as dependencies, all lists together. */
export const MAX_DEPENDENCIES_PER_CALL = 100;
export const MIN_TTL_MS = 1_000;
export const MAX_TTL_MS = 7 * 24 * 3600 * 1000;
/** Seqs are PostgreSQL bigints: a uint64 above this cannot name a message. */
export const MAX_SEQ = 9_223_372_036_854_775_807n;

/**
 * What an inbox may hold unacked before sends to it are refused (limit "inbox-backlog"):
 * messages, and bytes of message bodies as stored. A recipient that never acks must not
 * make the server store without bound (one member could fill hundreds of MiB in seconds).
 * 10,000 messages is days of an agent's normal traffic; 64 MiB is 256 of the largest plans
 * or 1,024 of the largest texts. Acks make room again.
 */
export interface BacklogLimits {
  maxMessages: number;
  maxBytes: number;
}

export const DEFAULT_BACKLOG_LIMITS: BacklogLimits = {
  maxMessages: 10_000,
  maxBytes: 64 * 1024 * 1024,
};

/** IMPORT_MAX_BYTES when unset: 4 GiB of bundle, which ImportTeam streams (never holds whole). */
export const IMPORT_MAX_BYTES_DEFAULT = 4 * 1024 ** 3;
