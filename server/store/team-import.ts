import type { BundleRecord } from "@team-protocols/client/bundle/format.js";
import { DomainError } from "../errors.js";
import type { Transaction } from "./database.js";
import { isUniqueViolation, sqlState } from "./sql-errors.js";

/** A member of an imported team: its new id and the token hash it was stored with. */
export interface ImportedMemberRow {
  id: number;
  name: string;
  role: string;
  status: string;
}

/**
 * The columns each table is loaded with, in the names the bundle's records use (to_jsonb of
 * the row): everything but generated ids and positions, which are given anew in the
 * bundle's order (requests' position, tasks' change, the journal's id).
 */
const COLUMNS = {
  tasks: [
    "team_id",
    "task_id",
    "state",
    "owner_id",
    "created_at",
    "updated_at",
    "subject",
    "description",
    "active_form",
    "status",
    "created_by",
  ],
  task_dependencies: ["team_id", "task_id", "blocked_by"],
  requests: [
    "id",
    "team_id",
    "kind",
    "from_id",
    "to_id",
    "status",
    "request_body",
    "response_body",
    "created_at",
    "resolved_at",
    "expires_at",
    "task_id",
    "answered_by",
  ],
  messages: [
    "recipient_id",
    "seq",
    "team_id",
    "sender_id",
    "from_name",
    "to_name",
    "request_id",
    "message_id",
    "kind",
    "body",
    "sent_at",
    "feed_position",
    "envelope_id",
    "thread_id",
    "reply_to",
  ],
  request_events: ["feed_position", "team_id", "request_id", "status", "at"],
  member_events: [
    "feed_position",
    "team_id",
    "member_id",
    "change",
    "role",
    "status",
    "permission_mode",
    "at",
    "presence",
    "last_seen_at",
    "last_seen_via",
  ],
  task_events: [
    "feed_position",
    "team_id",
    "task_id",
    "change",
    "actor_id",
    "state",
    "status",
    "owner_id",
    "created_by",
    "subject",
    "description",
    "active_form",
    "blocked_by",
    "open_blockers",
    "created_at",
    "at",
  ],
  protocol_attempts: [
    "team_id",
    "member_id",
    "at",
    "action",
    "to_name",
    "request_id",
    "outcome",
    "rule",
    "code",
    "message",
    "on_behalf_of",
  ],
} as const;

/** The history kinds: each takes a feed position anew, in the bundle's order. */
const HISTORY = new Set(["envelope", "request_event", "member_event", "task_event"]);

/**
 * Loads a bundle's records as a new team named `nameFor(its team record)`, batch by batch, in the bundle's
 * order, inside the caller's transaction (so a bundle refused at its end leaves nothing:
 * the caller rolls back). `tokenHashFor` gives each member the hash of its new token. The
 * feed positions are taken anew from the shared sequence, in the bundle's order, so
 * WatchTeam delivers the imported history in the order it was exported. Memory holds one
 * batch and the member names.
 */
export interface TeamLoader {
  /** The next records of the bundle, in its order (a batch may split any kind's run). */
  add(records: readonly BundleRecord[]): Promise<void>;
  /** After the last record: the members as stored. */
  finish(): { teamId: number; members: ImportedMemberRow[] };
}

export function createTeamLoader(
  tx: Transaction,
  nameFor: (team: BundleRecord) => string,
  tokenHashFor: (member: BundleRecord) => Uint8Array,
): TeamLoader {
  let teamId: number | undefined;
  const ids = new Map<string, number>();
  const members: ImportedMemberRow[] = [];
  const theTeam = () => {
    if (teamId === undefined) {
      throw new DomainError(
        "invalid-argument",
        "bundle-records: the bundle's first record is not its team",
      );
    }
    return teamId;
  };
  const id = (name: unknown) => {
    if (name === null || name === undefined) return null;
    const found = ids.get(String(name));
    if (found === undefined) {
      throw new DomainError(
        "invalid-argument",
        `bundle-records: a record names member "${String(name)}", whom the bundle does not hold`,
      );
    }
    return found;
  };
  const load = (table: keyof typeof COLUMNS, rows: object[]) => insertRows(tx, table, rows);

  async function addTeam(r: BundleRecord) {
    if (teamId !== undefined) {
      throw new DomainError("invalid-argument", "bundle-records: the bundle holds two teams");
    }
    const [t] = await tx.query<{ id: number }>(
      "INSERT INTO teams (name, created_at) VALUES ($1, $2) RETURNING id",
      [nameFor(r), r.created_at ?? new Date()],
    );
    teamId = (t as { id: number }).id;
  }

  async function addMember(m: BundleRecord) {
    // Cursors come last in a bundle: acked and appended counts start at 0 until then.
    const [row] = await tx.query<ImportedMemberRow>(
      `INSERT INTO members (team_id, name, role, status, permission_mode, token_hash,
                            acked_seq, acked_bytes, created_at, last_seen_at, stopped_at,
                            last_seen_via, presence)
       SELECT $1, r.name, r.role, r.status, r.permission_mode, $3, 0, 0,
              r.created_at, r.last_seen_at, r.stopped_at, r.last_seen_via, r.presence
       FROM jsonb_populate_record(null::members, $2::jsonb) r
       RETURNING id, name, role, status`,
      [theTeam(), JSON.stringify(m), tokenHashFor(m)],
    );
    const member = row as ImportedMemberRow;
    ids.set(member.name, member.id);
    members.push(member);
    await tx.query("INSERT INTO inboxes (member_id, last_seq, appended_bytes) VALUES ($1, 0, 0)", [
      member.id,
    ]);
  }

  async function addCursor(c: BundleRecord) {
    const member = id(c.member);
    await tx.query("UPDATE members SET acked_seq = $2, acked_bytes = $3 WHERE id = $1", [
      member,
      c.acked_seq ?? 0,
      c.acked_bytes ?? 0,
    ]);
    await tx.query("UPDATE inboxes SET last_seq = $2, appended_bytes = $3 WHERE member_id = $1", [
      member,
      c.last_seq ?? 0,
      c.appended_bytes ?? 0,
    ]);
  }

  return {
    async add(records) {
      // Team and member rows one by one (ids are needed at once); the rest per table, one
      // INSERT each, in the kinds' order (which is the order their keys depend on).
      const byKind = new Map<string, BundleRecord[]>();
      for (const r of records) {
        if (r.kind === "team") await addTeam(r);
        else if (r.kind === "member") await addMember(r);
        else {
          const list = byKind.get(r.kind);
          if (list) list.push(r);
          else byKind.set(r.kind, [r]);
        }
      }
      const of = (kind: string) => byKind.get(kind) ?? [];
      if (byKind.size === 0) return;
      const t = theTeam();
      const history = records.filter((r) => HISTORY.has(r.kind));
      const positions =
        history.length === 0
          ? []
          : await tx.query<{ p: string }>(
              `SELECT p::text AS p FROM (
                 SELECT nextval('team_feed_position') AS p FROM generate_series(1, $1)
               ) s ORDER BY s.p`,
              [history.length],
            );
      const position = new Map(history.map((r, i) => [r, positions[i]?.p]));
      await load(
        "tasks",
        of("task").map((r) => ({
          ...r,
          team_id: t,
          owner_id: id(r.owner),
          created_by: id(r.created_by),
        })),
      );
      await load(
        "task_dependencies",
        of("task_dependency").map((r) => ({ ...r, team_id: t })),
      );
      await load(
        "requests",
        of("request").map((r) => ({
          ...r,
          kind: r.request_kind,
          team_id: t,
          from_id: id(r.from),
          to_id: id(r.to),
          answered_by: id(r.answered_by),
        })),
      );
      await load(
        "messages",
        of("envelope").map((r) => ({
          ...r,
          kind: r.message_kind,
          team_id: t,
          recipient_id: id(r.inbox),
          sender_id: id(r.sender),
          feed_position: position.get(r),
        })),
      );
      await load(
        "request_events",
        of("request_event").map((r) => ({ ...r, team_id: t, feed_position: position.get(r) })),
      );
      await load(
        "member_events",
        of("member_event").map((r) => ({
          ...r,
          team_id: t,
          member_id: id(r.member),
          feed_position: position.get(r),
        })),
      );
      await load(
        "task_events",
        of("task_event").map((r) => ({
          ...r,
          team_id: t,
          actor_id: id(r.actor),
          owner_id: id(r.owner),
          created_by: id(r.created_by),
          feed_position: position.get(r),
        })),
      );
      await load(
        "protocol_attempts",
        of("journal").map((r) => ({ ...r, team_id: t, member_id: id(r.member) })),
      );
      for (const c of of("cursor")) await addCursor(c);
    },
    finish() {
      return { teamId: theTeam(), members };
    },
  };
}

/**
 * A database error of loading a bundle as the domain error it means: a taken team name,
 * records this server already holds (AlreadyExists), records its tables refuse
 * (InvalidArgument); anything else is returned as it is.
 */
export function importError(err: unknown, team: string): unknown {
  if (err instanceof DomainError) return err;
  if (isUniqueViolation(err)) {
    const detail = (err as { detail?: string }).detail ?? "";
    return new DomainError(
      "already-exists",
      detail.includes("(name)")
        ? `team "${team}" already exists: import it under another name`
        : `bundle-records: this server already holds a record of the bundle (${detail || "a unique key"}); ` +
            "load it on a server that does not hold the team it came from",
      { cause: err },
    );
  }
  // Data exceptions (22…) and integrity violations (23…): records the schema refuses.
  const state = sqlState(err) ?? "";
  if (state.startsWith("22") || state.startsWith("23")) {
    return new DomainError(
      "invalid-argument",
      `bundle-records: a record does not fit this server's tables (${(err as Error).message})`,
      { cause: err },
    );
  }
  return err;
}

/**
 * One INSERT per table: the rows as one jsonb array, turned back into the table's row type
 * by jsonb_populate_recordset, in the array's order (WITH ORDINALITY), so identities and
 * sequences are given in the bundle's order. Table and column names are this file's constants.
 */
async function insertRows(
  tx: Transaction,
  table: keyof typeof COLUMNS,
  rows: object[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = COLUMNS[table].join(", ");
  await tx.query(
    `INSERT INTO ${table} (${columns})
     SELECT ${columns} FROM jsonb_populate_recordset(null::${table}, $1::jsonb) WITH ORDINALITY r
     ORDER BY ordinality`,
    [JSON.stringify(rows)],
  );
}
