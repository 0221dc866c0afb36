import type {
  MemberRoleWord as MemberRole,
  MemberStatusWord as MemberStatus,
  PresenceWord as Presence,
  SeenViaWord as SeenVia,
} from "@team-protocols/contract/words.js";
import type { PermissionMode } from "../domain/words.js";
import { DomainError, LimitError } from "../errors.js";
import type { Database, Queryable } from "./database.js";
import { type PresenceWindows, presenceNow } from "./presence.js";
import { one } from "./rows.js";
import { isUniqueViolation } from "./sql-errors.js";

export type { MemberRole, MemberStatus, PermissionMode, Presence, SeenVia };

export interface MemberRow {
  id: number;
  teamId: number;
  teamName: string;
  name: string;
  role: MemberRole;
  status: MemberStatus;
  permissionMode: PermissionMode;
  createdAt: Date;
  lastSeenAt: Date | null;
  lastSeenVia: SeenVia | null;
  /**
   * Online, idle or offline: computed when read by listMembers; elsewhere the presence the
   * presence job last announced (store/presence.ts).
   */
  presence: Presence;
}

// Every query that returns members selects exactly these columns, so one mapper reads them.
const memberColumnsWith = (presence: string, teamName = "t.name") => `m.id, m.team_id,
  ${teamName} AS team_name, m.name,
  m.role, m.status, m.permission_mode, m.created_at, m.last_seen_at, m.last_seen_via,
  ${presence} AS presence`;
const memberColumns = memberColumnsWith("m.presence");

interface MemberSqlRow {
  id: number;
  team_id: number;
  team_name: string;
  name: string;
  role: MemberRole;
  status: MemberStatus;
  permission_mode: PermissionMode;
  created_at: Date;
  last_seen_at: Date | null;
  last_seen_via: SeenVia | null;
  presence: Presence;
}

const toMember = (r: MemberSqlRow): MemberRow => ({
  id: r.id,
  teamId: r.team_id,
  teamName: r.team_name,
  name: r.name,
  role: r.role,
  status: r.status,
  permissionMode: r.permission_mode,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  lastSeenVia: r.last_seen_via,
  presence: r.presence,
});

/**
 * The team feed's member event (docs/watch.md), as a CTE that inserts one row per member the
 * CTE `source` returned (its state right after the change). It runs in the statement that
 * changed the member row, after the row is locked by that change, so its feed position is
 * drawn after the lock: two changes of one member are in the feed in the order they happened.
 */
const memberEvent = (change: "added" | "stopped" | "removed" | "permission_mode", source: string) =>
  `event AS (
     INSERT INTO member_events (team_id, member_id, change, role, status, permission_mode)
     SELECT team_id, id, '${change}', role, status, permission_mode FROM ${source}
   )`;

/** The advisory lock creates take while MAX_TEAMS is on (next to migrate.ts's MIGRATION_LOCK). */
const TEAM_CEILING_LOCK = 7_361_201_002;

/** Creates a team and its lead (with an empty inbox). */
export async function createTeam(
  db: Database,
  team: string,
  lead: { name: string; tokenHash: Uint8Array; permissionMode: PermissionMode },
  /** Teams the database may hold at most (0: no ceiling). */
  maxTeams = 0,
): Promise<MemberRow> {
  try {
    return await db.transaction(async (tx) => {
      if (maxTeams > 0) {
        // Creates under a ceiling take turns (a transaction-scoped advisory lock), so two
        // racing for the last place cannot both count it free. Without one, none wait.
        await tx.query("SELECT pg_advisory_xact_lock($1)", [TEAM_CEILING_LOCK]);
        const [c] = await tx.query<{ n: string }>("SELECT count(*) AS n FROM teams");
        if (Number(one(c).n) >= maxTeams) {
          throw new LimitError(
            "max-teams",
            `this server holds ${maxTeams} teams, its ceiling (MAX_TEAMS; set TEAM_ADMIN_TOKEN ` +
              "to create teams without it)",
          );
        }
      }
      const [t] = await tx.query<{ id: number }>(
        "INSERT INTO teams (name) VALUES ($1) RETURNING id",
        [team],
      );
      return insertMember(tx, one(t).id, lead.name, "lead", lead.tokenHash, lead.permissionMode);
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new DomainError("already-exists", `team "${team}" already exists`, { cause: err });
    }
    throw err;
  }
}

async function insertMember(
  tx: Queryable,
  teamId: number,
  name: string,
  role: MemberRole,
  tokenHash: Uint8Array,
  permissionMode: PermissionMode,
): Promise<MemberRow> {
  const [row] = await tx.query<MemberSqlRow>(
    `WITH m AS (
       INSERT INTO members (team_id, name, role, token_hash, permission_mode)
       VALUES ($1, $2, $3, $4, $5)
       RETURNING *
     ), ${memberEvent("added", "m")}
     SELECT ${memberColumns} FROM m JOIN teams t ON t.id = m.team_id`,
    [teamId, name, role, tokenHash, permissionMode],
  );
  const member = toMember(one(row));
  await tx.query("INSERT INTO inboxes (member_id) VALUES ($1)", [member.id]);
  return member;
}

/**
 * Adds a teammate or an observer. A stopped member of that name comes back: new token, status
 * active, the role asked for, its inbox and cursor kept. An active member of that name is a
 * conflict.
 */
export async function addMember(
  db: Database,
  teamId: number,
  name: string,
  tokenHash: Uint8Array,
  permissionMode: PermissionMode,
  role: Exclude<MemberRole, "lead"> = "teammate",
  /** Active observers a team may have (0: no limit). */
  maxObservers = 0,
): Promise<MemberRow> {
  try {
    return await db.transaction(async (tx) => {
      if (role === "observer" && maxObservers > 0) {
        // Each observer may hold WatchTeam streams: their number is what a lead could grow.
        // Adds of observers to one team take turns on its row, so racing adds cannot both
        // count the last place free.
        await tx.query("SELECT id FROM teams WHERE id = $1 FOR UPDATE", [teamId]);
        const [c] = await tx.query<{ n: string }>(
          `SELECT count(*) AS n FROM members
            WHERE team_id = $1 AND role = 'observer' AND status = 'active'`,
          [teamId],
        );
        if (Number(one(c).n) >= maxObservers) {
          throw new LimitError(
            "observers-per-team",
            `this team already has ${maxObservers} observers (MAX_OBSERVERS_PER_TEAM); ` +
              "remove one before adding another",
          );
        }
      }
      const [revived] = await tx.query<MemberSqlRow>(
        `WITH m AS (
           UPDATE members
           SET status = 'active', token_hash = $3, stopped_at = NULL, permission_mode = $4,
               role = $5
           WHERE team_id = $1 AND name = $2 AND status = 'stopped' AND role <> 'lead'
           RETURNING *
         ), ${memberEvent("added", "m")}
         SELECT ${memberColumns} FROM m JOIN teams t ON t.id = m.team_id`,
        [teamId, name, tokenHash, permissionMode, role],
      );
      if (revived) return toMember(revived);
      return insertMember(tx, teamId, name, role, tokenHash, permissionMode);
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new DomainError("already-exists", `member "${name}" already exists and is active`, {
        cause: err,
      });
    }
    throw err;
  }
}

/**
 * Marks a teammate or an observer stopped (RemoveMember); its token is refused from then on.
 * Removing a member already stopped changes nothing new and adds no feed event.
 */
export async function stopMember(db: Queryable, teamId: number, name: string): Promise<MemberRow> {
  const [row] = await db.query<MemberSqlRow>(
    `WITH before AS (
       SELECT id, status FROM members
       WHERE team_id = $1 AND name = $2 AND role <> 'lead' FOR UPDATE
     ), m AS (
       UPDATE members SET status = 'stopped', stopped_at = now()
       FROM before WHERE members.id = before.id
       RETURNING members.*, before.status AS status_before
     ), ${memberEvent("removed", "(SELECT * FROM m WHERE status_before = 'active') removed")}
     SELECT ${memberColumns} FROM m JOIN teams t ON t.id = m.team_id`,
    [teamId, name],
  );
  if (!row) {
    const [other] = await db.query<{ role: MemberRole }>(
      "SELECT role FROM members WHERE team_id = $1 AND name = $2",
      [teamId, name],
    );
    if (other?.role === "lead") {
      throw new DomainError("failed-precondition", "the lead cannot remove itself");
    }
    throw new DomainError("not-found", `no member "${name}" in this team`);
  }
  return toMember(row);
}

/** One member of a team by name, active or not. */
export async function findMember(
  db: Queryable,
  teamId: number,
  name: string,
): Promise<MemberRow | undefined> {
  const [row] = await db.query<MemberSqlRow>(
    `SELECT ${memberColumns} FROM members m JOIN teams t ON t.id = m.team_id
     WHERE m.team_id = $1 AND m.name = $2`,
    [teamId, name],
  );
  return row ? toMember(row) : undefined;
}

/** Every member of a team, in the order they were added. */
export async function listMembers(
  db: Queryable,
  team: { id: number; name: string },
  /** Presence is computed with these windows, as of this statement. */
  windows: PresenceWindows,
): Promise<MemberRow[]> {
  // The team's name is the caller's (it cannot change): no join with teams for it.
  const rows = await db.query<MemberSqlRow>(
    `SELECT ${memberColumnsWith(presenceNow("$3", "$4"), "$2::text")}
     FROM members m WHERE m.team_id = $1 ORDER BY m.id`,
    [team.id, team.name, windows.onlineS, windows.offlineS],
  );
  return rows.map(toMember);
}

/** A member together with its team's lead (who protocol rules refer to). */
export interface MemberWithLead extends MemberRow {
  lead: { id: number; name: string; permissionMode: PermissionMode };
}

/** The member holding this token, active or not; undefined for an unknown token. */
export async function findMemberByTokenHash(
  db: Queryable,
  tokenHash: Uint8Array,
): Promise<MemberWithLead | undefined> {
  const [row] = await db.query<
    MemberSqlRow & { lead_id: number; lead_name: string; lead_permission_mode: PermissionMode }
  >(
    `SELECT ${memberColumns}, l.id AS lead_id, l.name AS lead_name,
            l.permission_mode AS lead_permission_mode
     FROM members m JOIN teams t ON t.id = m.team_id
     JOIN members l ON l.team_id = m.team_id AND l.role = 'lead'
     WHERE m.token_hash = $1`,
    [tokenHash],
  );
  if (!row) return undefined;
  return {
    ...toMember(row),
    lead: { id: row.lead_id, name: row.lead_name, permissionMode: row.lead_permission_mode },
  };
}

/** Marks a member stopped by an approved shutdown (inside the approving transaction). */
export async function markStopped(tx: Queryable, memberId: number): Promise<void> {
  await tx.query(
    `WITH m AS (
       UPDATE members SET status = 'stopped', stopped_at = now()
       WHERE id = $1 AND role = 'teammate' AND status = 'active'
       RETURNING *
     ), ${memberEvent("stopped", "m")}
     SELECT 1`,
    [memberId],
  );
}

/** Sets the permission mode a teammate inherits when its plan is approved (a feed event if it changed). */
export async function setPermissionMode(
  tx: Queryable,
  memberId: number,
  mode: PermissionMode,
): Promise<void> {
  await tx.query(
    `WITH m AS (
       UPDATE members SET permission_mode = $2 WHERE id = $1 AND permission_mode <> $2
       RETURNING *
     ), ${memberEvent("permission_mode", "m")}
     SELECT 1`,
    [memberId, mode],
  );
}

/**
 * Gives an active member a new token hash (RotateToken); the old token matches no member
 * from the commit on. Role, permission mode and inbox are untouched. undefined: no active
 * member of that name.
 */
export async function replaceToken(
  db: Queryable,
  teamId: number,
  name: string,
  tokenHash: Uint8Array,
): Promise<MemberRow | undefined> {
  const [row] = await db.query<MemberSqlRow>(
    `WITH m AS (
       UPDATE members SET token_hash = $3
       WHERE team_id = $1 AND name = $2 AND status = 'active'
       RETURNING *
     )
     SELECT ${memberColumns} FROM m JOIN teams t ON t.id = m.team_id`,
    [teamId, name, tokenHash],
  );
  return row ? toMember(row) : undefined;
}

/**
 * Deletes a team and every row it owns, children first (the foreign keys have no cascade but
 * request_events'), in the caller's transaction. Returns the ids of the members it had.
 */
export async function deleteTeamRows(tx: Queryable, teamId: number): Promise<number[]> {
  const members = await tx.query<{ id: number }>("SELECT id FROM members WHERE team_id = $1", [
    teamId,
  ]);
  const ids = members.map((m) => m.id);
  // The journal is append-only: its trigger (migration 004) lets a DELETE through only in a
  // transaction that says so, as retention does. Deleting a team deletes its journal too;
  // SET LOCAL ends with this transaction, so no other statement gains the right.
  await tx.query("SELECT set_config('team_protocols.retention', 'on', true)");
  for (const sql of [
    "DELETE FROM task_dependencies WHERE team_id = $1",
    "DELETE FROM task_events WHERE team_id = $1",
    "DELETE FROM tasks WHERE team_id = $1",
    "DELETE FROM requests WHERE team_id = $1",
    "DELETE FROM request_events WHERE team_id = $1",
    "DELETE FROM protocol_attempts WHERE team_id = $1",
    "DELETE FROM messages WHERE team_id = $1",
    // Its words went with its messages (migration 013's trigger); what was still queued goes.
    "DELETE FROM search_pending WHERE team_id = $1",
    // Its threads' activity went with its messages too (migration 014's trigger found none
    // left); said here as well, so the list of what a team owns is whole.
    "DELETE FROM thread_activity WHERE team_id = $1",
    "DELETE FROM sends WHERE sender_id IN (SELECT id FROM members WHERE team_id = $1)",
    "DELETE FROM inboxes WHERE member_id IN (SELECT id FROM members WHERE team_id = $1)",
    "DELETE FROM member_events WHERE team_id = $1",
    "DELETE FROM members WHERE team_id = $1",
    "DELETE FROM teams WHERE id = $1",
  ])
    await tx.query(sql, [teamId]);
  return ids;
}
