import type {
  PresenceWord as Presence,
  SeenViaWord as SeenVia,
} from "@team-protocols/contract/words.js";
import type { Queryable } from "./database.js";

/**
 * Presence (docs/presence.md): when the server last saw each member and how, and the
 * transitions between online, idle and offline that the presence job announces.
 */

export interface PresenceWindows {
  /** Seen within this many seconds: online. */
  onlineS: number;
  /** Seen within this many seconds (but not online): idle; otherwise offline. */
  offlineS: number;
}

/**
 * A member's presence as of the statement, in SQL over the row alias `m`; `online` and
 * `offline` are the parameters holding the windows in seconds. One expression, so that
 * ListMembers and the job's transitions can never disagree on the rule.
 */
export const presenceNow = (online: string, offline: string) => `(CASE
    WHEN m.status <> 'active' OR m.last_seen_at IS NULL THEN 'offline'
    WHEN m.last_seen_at > now() - make_interval(secs => ${online}::double precision) THEN 'online'
    WHEN m.last_seen_at > now() - make_interval(secs => ${offline}::double precision) THEN 'idle'
    ELSE 'offline' END)`;

/**
 * Records that these members were seen now, each by its way (one statement for the batch;
 * callers throttle it, as it is a write). A member listed twice keeps the last way listed.
 */
export async function markSeen(db: Queryable, seen: ReadonlyMap<number, SeenVia>): Promise<void> {
  if (seen.size === 0) return;
  await db.query(
    `UPDATE members m SET last_seen_at = now(), last_seen_via = s.via
     FROM unnest($1::int[], $2::text[]) AS s(id, via)
     WHERE m.id = s.id`,
    [[...seen.keys()], [...seen.values()]],
  );
}

export interface PresenceChange {
  memberId: number;
  teamId: number;
  name: string;
  presence: Presence;
}

/**
 * Moves every member whose announced presence is no longer its presence now to the new one,
 * with a 'presence' member event each, in one statement. The event is inserted after the
 * UPDATE holds the member's row lock, so its feed position orders it with the member's other
 * changes (migration 006). Two processes running this at once: the second waits for the
 * row, re-reads it, finds presence already moved and skips it, so each transition is
 * announced once.
 */
export async function announcePresenceChanges(
  db: Queryable,
  windows: PresenceWindows,
): Promise<PresenceChange[]> {
  const rows = await db.query<{ id: number; team_id: number; name: string; presence: Presence }>(
    `WITH due AS (
       SELECT m.id, ${presenceNow("$1", "$2")} AS now_presence FROM members m
       WHERE m.presence <> ${presenceNow("$1", "$2")}
     ), m AS (
       UPDATE members m SET presence = due.now_presence FROM due
       WHERE m.id = due.id AND m.presence <> due.now_presence
       RETURNING m.*
     ), event AS (
       INSERT INTO member_events (team_id, member_id, change, role, status, permission_mode,
                                  presence, last_seen_at, last_seen_via)
       SELECT team_id, id, 'presence', role, status, permission_mode, presence, last_seen_at,
              last_seen_via
       FROM m ORDER BY id
     )
     SELECT id, team_id, name, presence FROM m ORDER BY id`,
    [windows.onlineS, windows.offlineS],
  );
  return rows.map((r) => ({
    memberId: r.id,
    teamId: r.team_id,
    name: r.name,
    presence: r.presence,
  }));
}

/**
 * Active members holding claimed tasks who were last seen (or, never seen, added) more than
 * `absentS` seconds ago: the owners whose tasks the job gives back.
 */
export async function findAbsentOwners(
  db: Queryable,
  absentS: number,
): Promise<{ id: number; teamId: number; name: string }[]> {
  const rows = await db.query<{ id: number; team_id: number; name: string }>(
    `SELECT m.id, m.team_id, m.name FROM members m
     WHERE m.status = 'active'
       AND coalesce(m.last_seen_at, m.created_at) < now() - make_interval(secs => $1::double precision)
       AND EXISTS (SELECT 1 FROM tasks k WHERE k.owner_id = m.id AND k.state = 'claimed')
     ORDER BY m.id`,
    [absentS],
  );
  return rows.map((r) => ({ id: r.id, teamId: r.team_id, name: r.name }));
}

/**
 * Whether the member is still absent, read under a share lock on its row, so a stop that
 * races this release waits for it (or went first, and then the member is not active).
 */
export async function lockAbsentMember(
  tx: Queryable,
  memberId: number,
  absentS: number,
): Promise<boolean> {
  const rows = await tx.query(
    `SELECT 1 FROM members m
     WHERE m.id = $1 AND m.status = 'active'
       AND coalesce(m.last_seen_at, m.created_at) < now() - make_interval(secs => $2::double precision)
     FOR SHARE`,
    [memberId, absentS],
  );
  return rows.length > 0;
}
