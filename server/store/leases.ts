import type { Queryable } from "./database.js";

/** A lease as stored, with its holder's name. */
export interface LeaseRow {
  leaseId: string;
  teamId: number;
  holderId: number;
  holder: string;
  resource: string;
  mode: "exclusive" | "shared";
  reason: string;
  acquiredAt: Date;
  expiresAt: Date;
}

interface LeaseSqlRow {
  lease_id: string;
  team_id: number;
  holder_id: number;
  holder: string;
  resource: string;
  mode: "exclusive" | "shared";
  reason: string;
  acquired_at: Date;
  expires_at: Date;
}

const toLease = (r: LeaseSqlRow): LeaseRow => ({
  leaseId: r.lease_id,
  teamId: r.team_id,
  holderId: r.holder_id,
  holder: r.holder,
  resource: r.resource,
  mode: r.mode,
  reason: r.reason,
  acquiredAt: r.acquired_at,
  expiresAt: r.expires_at,
});

const columns = `l.lease_id, l.team_id, l.holder_id, m.name AS holder, l.resource, l.mode,
  l.reason, l.acquired_at, l.expires_at`;

/**
 * Takes the team's lease lock for the rest of the transaction: acquires of one team run one
 * at a time, so two overlapping ones cannot both see the other missing. A row lock on the
 * team (FOR NO KEY UPDATE: it does not block the key-share locks every insert that refers to
 * the team takes, so sends go on) rather than an exclusion constraint, since whether two
 * globs overlap is not an operator an index can answer.
 */
export async function lockTeamLeases(tx: Queryable, teamId: number): Promise<void> {
  await tx.query("SELECT id FROM teams WHERE id = $1 FOR NO KEY UPDATE", [teamId]);
}

/** The team's unexpired leases, oldest first; only `holderId`'s when given. */
export async function liveLeases(
  db: Queryable,
  teamId: number,
  holderId?: number,
): Promise<LeaseRow[]> {
  const rows = await db.query<LeaseSqlRow>(
    `SELECT ${columns} FROM leases l JOIN members m ON m.id = l.holder_id
     WHERE l.team_id = $1 AND l.expires_at > clock_timestamp()
       AND ($2::integer IS NULL OR l.holder_id = $2)
     ORDER BY l.id`,
    [teamId, holderId ?? null],
  );
  return rows.map(toLease);
}

/** One unexpired lease of the team by id, locked for update. */
export async function findLiveLease(
  tx: Queryable,
  teamId: number,
  leaseId: string,
): Promise<LeaseRow | undefined> {
  const [row] = await tx.query<LeaseSqlRow>(
    `SELECT ${columns} FROM leases l JOIN members m ON m.id = l.holder_id
     WHERE l.team_id = $1 AND l.lease_id = $2 AND l.expires_at > clock_timestamp()
     FOR UPDATE OF l`,
    [teamId, leaseId],
  );
  return row ? toLease(row) : undefined;
}

export async function insertLease(
  tx: Queryable,
  lease: {
    leaseId: string;
    teamId: number;
    holderId: number;
    resource: string;
    mode: "exclusive" | "shared";
    reason: string;
    ttlMs: number;
  },
): Promise<LeaseRow> {
  const [row] = await tx.query<LeaseSqlRow>(
    `WITH l AS (
       INSERT INTO leases (lease_id, team_id, holder_id, resource, mode, reason, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp() + $7 * interval '1 millisecond')
       RETURNING *
     )
     SELECT ${columns} FROM l JOIN members m ON m.id = l.holder_id`,
    [
      lease.leaseId,
      lease.teamId,
      lease.holderId,
      lease.resource,
      lease.mode,
      lease.reason,
      lease.ttlMs,
    ],
  );
  if (!row) throw new Error("INSERT INTO leases returned no row");
  return toLease(row);
}

export async function extendLease(tx: Queryable, leaseId: string, ttlMs: number): Promise<Date> {
  const [row] = await tx.query<{ expires_at: Date }>(
    `UPDATE leases SET expires_at = clock_timestamp() + $2 * interval '1 millisecond'
     WHERE lease_id = $1 RETURNING expires_at`,
    [leaseId, ttlMs],
  );
  if (!row) throw new Error(`lease ${leaseId} vanished while locked`);
  return row.expires_at;
}

export async function deleteLease(tx: Queryable, leaseId: string): Promise<void> {
  await tx.query("DELETE FROM leases WHERE lease_id = $1", [leaseId]);
}

/** Releases every lease a member holds (it stopped or was removed): the ones it had. */
export async function releaseLeasesOf(tx: Queryable, memberId: number): Promise<LeaseRow[]> {
  const rows = await tx.query<LeaseSqlRow>(
    `WITH l AS (DELETE FROM leases WHERE holder_id = $1 RETURNING *)
     SELECT ${columns} FROM l JOIN members m ON m.id = l.holder_id ORDER BY l.id`,
    [memberId],
  );
  return rows.map(toLease);
}

/** Deletes up to `limit` lapsed leases and returns them, for the sweeper to tell holders. */
export async function sweepExpiredLeases(db: Queryable, limit: number): Promise<LeaseRow[]> {
  const rows = await db.query<LeaseSqlRow>(
    `WITH gone AS (
       DELETE FROM leases WHERE id IN (
         SELECT id FROM leases WHERE expires_at <= clock_timestamp()
         ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING *
     )
     SELECT ${columns} FROM gone l JOIN members m ON m.id = l.holder_id ORDER BY l.expires_at`,
    [limit],
  );
  return rows.map(toLease);
}
