import type { RequestKind, RequestStatus } from "../domain/words.js";
import { RuleViolationError } from "../errors.js";
import type { Queryable } from "./database.js";
import { one } from "./rows.js";

export type { RequestKind, RequestStatus };

export interface RequestRow {
  id: string;
  /** Creation order (ListRequests' page cursor). */
  position: bigint;
  teamId: number;
  teamName: string;
  kind: RequestKind;
  fromId: number;
  fromName: string;
  toId: number;
  toName: string;
  /** As the parties see it: a pending request past its deadline is already expired. */
  status: RequestStatus;
  requestBody: Uint8Array;
  responseBody: Uint8Array | null;
  createdAt: Date;
  resolvedAt: Date | null;
  expiresAt: Date;
  /** Who answered: the addressee, or an approver for the lead; "" when nobody did. */
  answeredBy: string;
}

interface RequestSqlRow {
  id: string;
  position: bigint;
  team_id: number;
  team_name: string;
  kind: RequestKind;
  from_id: number;
  from_name: string;
  to_id: number;
  to_name: string;
  status: RequestStatus;
  request_body: Uint8Array;
  response_body: Uint8Array | null;
  created_at: Date;
  resolved_at: Date | null;
  expires_at: Date;
  answered_by_name: string | null;
}

// The status column says 'pending' until the sweeper runs; readers must not see a request
// as answerable once its deadline has passed, so the effective status is computed here.
const requestColumns = `r.id, r.position, r.team_id, t.name AS team_name, r.kind, r.from_id,
  f.name AS from_name, r.to_id, a.name AS to_name,
  CASE WHEN r.status = 'pending' AND r.expires_at <= clock_timestamp() THEN 'expired'
       ELSE r.status END AS status,
  r.request_body, r.response_body, r.created_at,
  CASE WHEN r.status = 'pending' AND r.expires_at <= clock_timestamp() THEN r.expires_at
       ELSE r.resolved_at END AS resolved_at,
  r.expires_at, ab.name AS answered_by_name`;

const requestJoins = `requests r JOIN teams t ON t.id = r.team_id
  JOIN members f ON f.id = r.from_id JOIN members a ON a.id = r.to_id
  LEFT JOIN members ab ON ab.id = r.answered_by`;

const toRequest = (r: RequestSqlRow): RequestRow => ({
  id: r.id,
  position: r.position,
  teamId: r.team_id,
  teamName: r.team_name,
  kind: r.kind,
  fromId: r.from_id,
  fromName: r.from_name,
  toId: r.to_id,
  toName: r.to_name,
  status: r.status,
  requestBody: r.request_body,
  responseBody: r.response_body,
  createdAt: r.created_at,
  resolvedAt: r.resolved_at,
  expiresAt: r.expires_at,
  answeredBy: r.answered_by_name ?? "",
});

export interface NewRequest {
  id: string;
  teamId: number;
  kind: RequestKind;
  fromId: number;
  toId: number;
  body: Uint8Array;
  ttlMs: number;
  /** The task a task protocol's request names (its history is every request naming it). */
  taskId?: string | undefined;
}

/** Stores a new pending request (inside the transaction that delivers it). */
export async function openRequest(tx: Queryable, r: NewRequest): Promise<void> {
  // One clock reading for both ends, so expires_at - created_at is exactly the ttl (the
  // column default, the transaction's start, lies before any wait for the inbox lock).
  // The same statement stores the feed's "created" event (docs/watch.md).
  await tx.query(
    `WITH r AS (
       INSERT INTO requests (id, team_id, kind, from_id, to_id, request_body, created_at,
                             expires_at, task_id)
       SELECT $1, $2, $3, $4, $5, $6, c.t, c.t + $7 * interval '1 millisecond', $8
       FROM (SELECT clock_timestamp() AS t) c
       RETURNING id, team_id, status, created_at
     )
     INSERT INTO request_events (team_id, request_id, status, at)
     SELECT team_id, id, status, created_at FROM r`,
    [r.id, r.teamId, r.kind, r.fromId, r.toId, r.body, r.ttlMs, r.taskId ?? null],
  );
}

/**
 * Stores a request that is decided as it is made (a task_assign: the lead's word needs no
 * answer): approved, resolved and expiring at its creation, so it sits in the task's history,
 * ListRequests and the team feed (one event, approved) like any answered request.
 */
export async function recordApprovedRequest(
  tx: Queryable,
  r: Omit<NewRequest, "ttlMs">,
): Promise<void> {
  await tx.query(
    `WITH r AS (
       INSERT INTO requests (id, team_id, kind, from_id, to_id, request_body, status, created_at,
                             resolved_at, expires_at, task_id)
       SELECT $1, $2, $3, $4, $5, $6, 'approved', c.t, c.t, c.t, $7
       FROM (SELECT clock_timestamp() AS t) c
       RETURNING id, team_id, status, created_at
     )
     INSERT INTO request_events (team_id, request_id, status, at)
     SELECT team_id, id, status, created_at FROM r`,
    [r.id, r.teamId, r.kind, r.fromId, r.toId, r.body, r.taskId ?? null],
  );
}

/** The task a request names ("" for a request of another protocol, undefined: no request). */
export async function taskIdOfRequest(
  db: Queryable,
  teamId: number,
  id: string,
): Promise<string | undefined> {
  const [row] = await db.query<{ task_id: string | null }>(
    "SELECT task_id FROM requests WHERE id = $1 AND team_id = $2",
    [id, teamId],
  );
  return row ? (row.task_id ?? "") : undefined;
}

/** Every request that named a task, oldest first (its history). */
export async function requestsOfTask(
  db: Queryable,
  teamId: number,
  taskId: string,
): Promise<RequestRow[]> {
  const rows = await db.query<RequestSqlRow>(
    `SELECT ${requestColumns} FROM ${requestJoins}
     WHERE r.team_id = $1 AND r.task_id = $2 ORDER BY r.position`,
    [teamId, taskId],
  );
  return rows.map(toRequest);
}

/**
 * Locks a task's pending requests (those still before their deadline), in id order like
 * lockPendingRequestsOf. The caller holds the task's row lock already.
 */
export async function lockPendingRequestsOfTask(
  tx: Queryable,
  teamId: number,
  taskId: string,
): Promise<RequestRow[]> {
  const due = await tx.query<{ id: string }>(
    `SELECT id FROM requests
     WHERE team_id = $1 AND task_id = $2 AND status = 'pending'
       AND expires_at > clock_timestamp()
     ORDER BY id FOR UPDATE`,
    [teamId, taskId],
  );
  const rows: RequestRow[] = [];
  for (const d of due) rows.push(one(await findRequest(tx, teamId, d.id)));
  return rows.filter((r) => r.status === "pending");
}

/** One request of a team; undefined when there is none with that id in the team. */
export async function findRequest(
  db: Queryable,
  teamId: number,
  id: string,
  options: { lock?: boolean } = {},
): Promise<RequestRow | undefined> {
  const [row] = await db.query<RequestSqlRow>(
    `SELECT ${requestColumns} FROM ${requestJoins}
     WHERE r.id = $1 AND r.team_id = $2 ${options.lock ? "FOR UPDATE OF r" : ""}`,
    [id, teamId],
  );
  return row ? toRequest(row) : undefined;
}

const kindWords: Record<RequestKind, string> = {
  shutdown: "shutdown",
  plan_approval: "plan approval",
  task_claim: "task claim",
  task_assign: "task assignment",
  task_handoff: "task handoff",
  result_signoff: "result sign-off",
  permission: "permission",
};

/**
 * Locks a request for an answer and enforces the stateful rules, in this order:
 * unknown-request (no such request of this kind in the team), addressee-only (the request
 * was not addressed to the responder), once-only (no longer pending, expiry included).
 * The row lock serialises racing responders: the first to commit wins, the others then
 * find it answered.
 */
export async function lockPendingRequest(
  tx: Queryable,
  q: {
    teamId: number;
    id: string;
    kind: RequestKind;
    responderId: number;
    /** The lead's id when the responder is an approver: it may answer the lead's requests. */
    actingForId?: number | undefined;
  },
): Promise<RequestRow> {
  const request = await findRequest(tx, q.teamId, q.id, { lock: true });
  if (!request || request.kind !== q.kind) {
    throw new RuleViolationError(
      "unknown-request",
      "not-found",
      request
        ? `request ${q.id} is a ${kindWords[request.kind]} request, not a ${kindWords[q.kind]} request`
        : `no request ${q.id} in this team`,
      "message.request_id",
    );
  }
  if (request.toId !== q.responderId && request.toId !== q.actingForId) {
    throw new RuleViolationError(
      "addressee-only",
      "permission-denied",
      q.actingForId === undefined
        ? `request ${q.id} was addressed to "${request.toName}"; only they may answer it`
        : `request ${q.id} was addressed to "${request.toName}", not to the lead; ` +
            "an approver answers only requests addressed to the lead",
      "message.request_id",
    );
  }
  if (request.status !== "pending") {
    throw new RuleViolationError(
      "once-only",
      "failed-precondition",
      `request ${q.id} is already ${request.status}; a request is answered once`,
      "message.request_id",
    );
  }
  return request;
}

/**
 * Moves a pending request to a final state: a compare-and-set on status, so of any number
 * of concurrent transitions exactly one changes the row. Returns false when it was no
 * longer pending (or had passed its deadline).
 */
export async function finishRequest(
  tx: Queryable,
  id: string,
  status: Exclude<RequestStatus, "pending">,
  responseBody: Uint8Array | null,
  /** Who answered (approved, rejected): the addressee, or an approver for the lead. */
  answeredBy: number | null = null,
): Promise<boolean> {
  const rows = await tx.query(
    // An expired request left pending at its deadline (that is what readers saw from then
    // on), not when the sweeper got to it. The feed's event is stored by the same statement,
    // after the UPDATE has locked the row (so a request's events keep their order).
    `WITH moved AS (
       UPDATE requests SET status = $2, response_body = $3, answered_by = $4,
         resolved_at = CASE WHEN $2 = 'expired' THEN expires_at ELSE clock_timestamp() END
       WHERE id = $1 AND status = 'pending'
         AND ($2 = 'expired' OR expires_at > clock_timestamp())
       RETURNING id, team_id, status, resolved_at
     ), event AS (
       INSERT INTO request_events (team_id, request_id, status, at)
       SELECT team_id, id, status, resolved_at FROM moved
     )
     SELECT 1 FROM moved`,
    [id, status, responseBody, answeredBy],
  );
  return rows.length === 1;
}

/** Pending requests whose deadline has passed, locked for the sweeper (SKIP LOCKED). */
export async function claimOverdueRequest(tx: Queryable): Promise<RequestRow | undefined> {
  const [due] = await tx.query<{ id: string; team_id: number }>(
    `SELECT id, team_id FROM requests
     WHERE status = 'pending' AND expires_at <= clock_timestamp()
     ORDER BY expires_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
  );
  return due ? findRequest(tx, due.team_id, due.id) : undefined;
}

export interface RequestFilter {
  teamId: number;
  /** Only requests this member is a party of (from or to). */
  partyId?: number | undefined;
  /** And (for the lead's party filter) only those this member is party of too. */
  alsoPartyId?: number | undefined;
  status?: RequestStatus | undefined;
  kind?: RequestKind | undefined;
  /** Keyset: requests created before this position. */
  beforePosition?: bigint | undefined;
  limit: number;
}

/** A team's requests, newest first. */
export async function listRequests(db: Queryable, f: RequestFilter): Promise<RequestRow[]> {
  // Filters that are not set are passed as NULL and switch themselves off, so the statement
  // text never changes with the filter.
  const rows = await db.query<RequestSqlRow>(
    `SELECT * FROM (
       SELECT ${requestColumns} FROM ${requestJoins}
       WHERE r.team_id = $1
         AND ($2::int IS NULL OR r.from_id = $2 OR r.to_id = $2)
         AND ($3::int IS NULL OR r.from_id = $3 OR r.to_id = $3)
         AND ($4::text IS NULL OR r.kind = $4)
         AND ($5::bigint IS NULL OR r.position < $5)
     ) x
     WHERE ($6::text IS NULL OR x.status = $6)
     ORDER BY x.position DESC
     LIMIT $7`,
    [
      f.teamId,
      f.partyId ?? null,
      f.alsoPartyId ?? null,
      f.kind ?? null,
      f.beforePosition ?? null,
      f.status ?? null,
      f.limit,
    ],
  );
  return rows.map(toRequest);
}

/** The current state of a request that must exist (after a transition). */
export async function loadRequest(db: Queryable, teamId: number, id: string): Promise<RequestRow> {
  return one(await findRequest(db, teamId, id));
}

/**
 * Locks the pending requests a member is party to (requester or addressee), in id order so
 * that two transactions locking several requests cannot deadlock.
 */
export async function lockPendingRequestsOf(
  tx: Queryable,
  memberId: number,
): Promise<RequestRow[]> {
  const due = await tx.query<{ id: string; team_id: number }>(
    `SELECT id, team_id FROM requests
     WHERE (from_id = $1 OR to_id = $1) AND status = 'pending'
     ORDER BY id FOR UPDATE`,
    [memberId],
  );
  const rows: RequestRow[] = [];
  for (const d of due) rows.push(one(await findRequest(tx, d.team_id, d.id)));
  return rows;
}
