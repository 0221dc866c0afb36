import type { AttemptOutcome } from "../domain/words.js";
import type { Queryable } from "./database.js";

/**
 * The protocol journal (migration 003): one row per protocol step a member attempted,
 * accepted or refused. Only ever inserted into; the table's triggers refuse the rest.
 */

export type { AttemptOutcome };

export interface NewAttempt {
  teamId: number;
  memberId: number;
  /** The Message case sent (snake_case, e.g. "shutdown_response"), or "cancel_request". */
  action: string;
  to?: string;
  requestId?: string;
  outcome: AttemptOutcome;
  /** For a refusal: the rule id ("" when no protocol rule refused it). */
  rule?: string;
  /** For a refusal: the Connect code in snake_case, e.g. "permission_denied". */
  code?: string;
  /** For a refusal: the error message the caller received. */
  message?: string;
  /** For an approver's accepted answer: the lead it answered for. */
  onBehalfOf?: string;
}

export interface AttemptRow {
  id: bigint;
  teamName: string;
  memberName: string;
  at: Date;
  action: string;
  to: string;
  requestId: string;
  outcome: AttemptOutcome;
  rule: string;
  code: string;
  message: string;
  onBehalfOf: string;
}

/** Caps of the table's CHECK constraints: what a refused call carried may be any size. */
const MAX_NAME_CHARS = 128;
const MAX_MESSAGE_CHARS = 1024;

/**
 * A text column as stored: NUL (which PostgreSQL text cannot hold) shown as \0, capped at
 * `max` characters as PostgreSQL counts them (code points: a surrogate pair is not split).
 */
function capped(s: string | undefined, max: number): string {
  const text = (s ?? "").replaceAll("\0", "\\0");
  if (text.length <= max) return text;
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** Appends one attempt; inside the transaction of its effect when it was accepted. */
export async function recordAttempt(db: Queryable, a: NewAttempt): Promise<void> {
  const insert = attemptInsert(a, 1);
  await db.query(insert.sql, insert.params);
}

/**
 * The INSERT of one attempt, its parameters numbered from `first`: a statement of its own, or
 * a CTE of another statement (store/send.ts journals an accepted step with its messages, which
 * saves the transaction a round trip while it holds the inbox lock).
 */
export function attemptInsert(a: NewAttempt, first: number): { sql: string; params: unknown[] } {
  const p = Array.from({ length: 10 }, (_, i) => `$${first + i}`);
  return {
    sql: `INSERT INTO protocol_attempts
            (team_id, member_id, action, to_name, request_id, outcome, rule, code, message,
             on_behalf_of)
          VALUES (${p.join(", ")})`,
    params: [
      a.teamId,
      a.memberId,
      a.action,
      capped(a.to, MAX_NAME_CHARS),
      capped(a.requestId, MAX_NAME_CHARS),
      a.outcome,
      capped(a.rule, 64),
      capped(a.code, 64),
      capped(a.message, MAX_MESSAGE_CHARS),
      capped(a.onBehalfOf, MAX_NAME_CHARS),
    ],
  };
}

export interface AttemptFilter {
  teamId: number;
  /** Only this member's attempts. */
  memberId?: number | undefined;
  outcome?: AttemptOutcome | undefined;
  requestId?: string | undefined;
  /** Keyset pagination: only ids below this one. */
  beforeId?: bigint | undefined;
  limit: number;
}

interface AttemptSqlRow {
  id: bigint;
  team_name: string;
  member_name: string;
  at: Date;
  action: string;
  to_name: string;
  request_id: string;
  outcome: AttemptOutcome;
  rule: string;
  code: string;
  message: string;
  on_behalf_of: string;
}

/** A team's attempts, newest first. Unset filters are NULL and switch themselves off. */
export async function listAttempts(db: Queryable, f: AttemptFilter): Promise<AttemptRow[]> {
  const rows = await db.query<AttemptSqlRow>(
    `SELECT a.id, t.name AS team_name, m.name AS member_name, a.at, a.action, a.to_name,
            a.request_id, a.outcome, a.rule, a.code, a.message, a.on_behalf_of
     FROM protocol_attempts a
     JOIN teams t ON t.id = a.team_id
     JOIN members m ON m.id = a.member_id
     WHERE a.team_id = $1
       AND ($2::int IS NULL OR a.member_id = $2)
       AND ($3::text IS NULL OR a.outcome = $3)
       AND ($4::text IS NULL OR a.request_id = $4)
       AND ($5::bigint IS NULL OR a.id < $5)
     ORDER BY a.id DESC
     LIMIT $6`,
    [
      f.teamId,
      f.memberId ?? null,
      f.outcome ?? null,
      f.requestId ?? null,
      f.beforeId ?? null,
      f.limit,
    ],
  );
  return rows.map((r) => ({
    id: r.id,
    teamName: r.team_name,
    memberName: r.member_name,
    at: r.at,
    action: r.action,
    to: r.to_name,
    requestId: r.request_id,
    outcome: r.outcome,
    rule: r.rule,
    code: r.code,
    message: r.message,
    onBehalfOf: r.on_behalf_of,
  }));
}
