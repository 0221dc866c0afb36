import type { BundleRecord } from "@team-protocols/client/bundle/format.js";
import type { Database, Transaction } from "./database.js";
import { pagesOf } from "./paged-transaction.js";

/** Rows fetched per page of a cursor: the records a page of the export holds at most. */
export const EXPORT_PAGE_ROWS = 1000;

/**
 * Every record of a team an export bundle holds, in pages of EXPORT_PAGE_ROWS, read through
 * cursors in one REPEATABLE READ transaction so they are one consistent picture however
 * long the reader takes (on the embedded database the one backend is held meanwhile: it
 * runs one transaction at a time). Rows are turned into JSON by PostgreSQL itself (to_jsonb:
 * timestamps as ISO 8601 with microseconds, bytea as "\x…" hex, arrays as arrays), so
 * import's jsonb_populate_recordset reads them back exactly. Internal ids are replaced by
 * member names; token hashes, feed positions and transaction ids are left out. A row's own
 * `kind` column (a message's, a request's) is `message_kind` / `request_kind`: `kind` is the
 * record's.
 */
export function readTeamRecordPages(db: Database, teamId: number): AsyncGenerator<BundleRecord[]> {
  return pagesOf<BundleRecord[]>(db, async (tx, emit) => {
    await tx.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    // to_jsonb writes timestamps in the session's time zone: one zone, so two servers agree.
    await tx.query("SET LOCAL TimeZone = 'UTC'");
    // The transaction waits on its reader between pages: a slow reader is not an idle
    // session to cut (the call's own end rolls it back).
    await tx.query("SET LOCAL idle_in_transaction_session_timeout = 0");
    const read = (sql: string) => readCursor(tx, sql, teamId, emit);
    const names = "(SELECT name FROM members WHERE id = $ID)";
    const name = (column: string) => names.replace("$ID", column);
    await read(
      `SELECT jsonb_build_object('kind', 'team', 'name', name, 'created_at', created_at) AS r
       FROM teams WHERE id = $1`,
    );
    await read(
      `SELECT jsonb_build_object('kind', 'member') ||
              (to_jsonb(m) - 'id' - 'team_id' - 'token_hash' - 'acked_seq' - 'acked_bytes') AS r
       FROM members m WHERE team_id = $1 ORDER BY id`,
    );
    await read(
      `SELECT jsonb_build_object('kind', 'task', 'owner', ${name("t.owner_id")},
                                 'created_by', ${name("t.created_by")}) ||
              (to_jsonb(t) - 'team_id' - 'owner_id' - 'created_by' - 'change') AS r
       FROM tasks t WHERE team_id = $1 ORDER BY change`,
    );
    await read(
      `SELECT jsonb_build_object('kind', 'task_dependency', 'task_id', task_id,
                                 'blocked_by', blocked_by) AS r
       FROM task_dependencies WHERE team_id = $1 ORDER BY task_id, blocked_by`,
    );
    await read(
      `SELECT (to_jsonb(q) - 'team_id' - 'from_id' - 'to_id' - 'answered_by' - 'position') ||
              jsonb_build_object('kind', 'request', 'request_kind', q.kind,
                                 'from', ${name("q.from_id")}, 'to', ${name("q.to_id")},
                                 'answered_by', ${name("q.answered_by")}) AS r
       FROM requests q WHERE team_id = $1 ORDER BY position`,
    );
    // The history, in the order the team feed (WatchTeam) delivers it: by feed position,
    // which each inbox allocates under its row lock, so it agrees with every inbox's seq.
    await read(
      `SELECT r FROM (
         SELECT m.feed_position AS p,
                (to_jsonb(m) - 'team_id' - 'recipient_id' - 'sender_id' - 'feed_position' - 'feed_xid') ||
                jsonb_build_object('kind', 'envelope', 'message_kind', m.kind,
                                   'inbox', ${name("m.recipient_id")}, 'sender', ${name("m.sender_id")}) AS r
         FROM messages m WHERE team_id = $1
         UNION ALL
         SELECT e.feed_position,
                jsonb_build_object('kind', 'request_event') ||
                (to_jsonb(e) - 'team_id' - 'feed_position' - 'feed_xid')
         FROM request_events e WHERE team_id = $1
         UNION ALL
         SELECT e.feed_position,
                jsonb_build_object('kind', 'member_event', 'member', ${name("e.member_id")}) ||
                (to_jsonb(e) - 'team_id' - 'member_id' - 'feed_position' - 'feed_xid')
         FROM member_events e WHERE team_id = $1
         UNION ALL
         SELECT e.feed_position,
                jsonb_build_object('kind', 'task_event', 'actor', ${name("e.actor_id")},
                                   'owner', ${name("e.owner_id")}, 'created_by', ${name("e.created_by")}) ||
                (to_jsonb(e) - 'team_id' - 'actor_id' - 'owner_id' - 'created_by' - 'feed_position' - 'feed_xid')
         FROM task_events e WHERE team_id = $1
       ) h ORDER BY p`,
    );
    await read(
      `SELECT jsonb_build_object('kind', 'journal', 'member', ${name("a.member_id")}) ||
              (to_jsonb(a) - 'id' - 'team_id' - 'member_id') AS r
       FROM protocol_attempts a WHERE team_id = $1 ORDER BY id`,
    );
    await read(
      `SELECT jsonb_build_object('kind', 'cursor', 'member', m.name, 'acked_seq', m.acked_seq,
                                 'acked_bytes', m.acked_bytes, 'last_seq', i.last_seq,
                                 'appended_bytes', i.appended_bytes) AS r
       FROM members m JOIN inboxes i ON i.member_id = m.id WHERE m.team_id = $1 ORDER BY m.id`,
    );
  });
}

/**
 * One query's rows through a cursor, EXPORT_PAGE_ROWS at a time, each page emitted. The
 * cursor is declared with the team id as a bound parameter (the SQL is this file's own).
 */
async function readCursor(
  tx: Transaction,
  sql: string,
  teamId: number,
  emit: (page: BundleRecord[]) => Promise<void>,
): Promise<void> {
  await tx.query(`DECLARE export_rows NO SCROLL CURSOR FOR ${sql}`, [teamId]);
  for (;;) {
    const rows = await tx.query<{ r: BundleRecord }>(`FETCH ${EXPORT_PAGE_ROWS} FROM export_rows`);
    if (rows.length > 0) await emit(rows.map((row) => row.r));
    if (rows.length < EXPORT_PAGE_ROWS) break;
  }
  await tx.query("CLOSE export_rows");
}
