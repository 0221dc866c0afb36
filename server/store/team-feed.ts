import type { MemberChangeWord as MemberChange } from "@team-protocols/contract/words.js";
import type { Queryable } from "./database.js";
import type { MemberRole, MemberStatus, PermissionMode, Presence, SeenVia } from "./members.js";
import type { RequestKind, RequestStatus } from "./requests.js";
import type { TaskChange, TaskProgress, TaskState } from "./tasks.js";

/**
 * The team feed (WatchTeam): the events of one team that became visible between two database
 * snapshots, in position order. docs/watch.md says why this order agrees with every inbox,
 * request and member, and why reading by snapshot difference never skips an event.
 */

export type { MemberChange, TaskChange };

export type FeedEvent = { position: bigint; at: Date } & (
  | {
      source: "envelope";
      recipient: string;
      seq: bigint;
      fromName: string;
      toName: string;
      requestId: string;
      messageId: string;
      body: Uint8Array;
      envelopeId: string;
      threadId: string;
      replyTo: string;
    }
  | {
      source: "request";
      request: {
        id: string;
        kind: RequestKind;
        fromName: string;
        toName: string;
        /** The status this event moved the request to. */
        status: RequestStatus;
        requestBody: Uint8Array;
        /** Set on a final event that was an answer. */
        responseBody: Uint8Array | null;
        createdAt: Date;
        expiresAt: Date;
        /** Who answered (set with responseBody): the addressee, or an approver for the lead. */
        answeredBy: string;
      };
    }
  | {
      source: "task";
      change: TaskChange;
      /** The member whose call made the change. */
      by: string;
      /** The task as the change left it (blocks is not kept). */
      task: {
        taskId: string;
        state: TaskState;
        ownerName: string;
        createdAt: Date;
        subject: string;
        description: string;
        activeForm: string;
        blockedBy: string[];
        openBlockers: string[];
        status: TaskProgress;
        ready: boolean;
        createdByName: string;
      };
    }
  | {
      source: "member";
      change: MemberChange;
      member: {
        name: string;
        role: MemberRole;
        status: MemberStatus;
        permissionMode: PermissionMode;
        createdAt: Date;
        /** Set on a 'presence' change: the presence announced, and what was last seen. */
        presence: Presence | null;
        lastSeenAt: Date | null;
        lastSeenVia: SeenVia | null;
      };
    }
);

export interface FeedWindow {
  /** Events visible in this snapshot were delivered before. */
  since: string;
  /** The window's other end; unset: a new window up to the current snapshot. */
  upto?: string | undefined;
  /** Within a window being continued: only events after this position. */
  after?: bigint | undefined;
}

export interface FeedPage {
  events: FeedEvent[];
  /** The snapshot the window ends at (the one passed in, or the one this read took). */
  upto: string;
  /** The window holds more events than this page (by count or bytes): read on at once. */
  more: boolean;
}

interface FeedSqlRow {
  upto: string;
  fetched: bigint | null;
  source: "envelope" | "request" | "member" | "task" | null;
  position: bigint | null;
  recipient: string | null;
  seq: bigint | null;
  from_name: string | null;
  to_name: string | null;
  message_request_id: string | null;
  message_id: string | null;
  body: Uint8Array | null;
  sent_at: Date | null;
  envelope_id: string | null;
  thread_id: string | null;
  reply_to: string | null;
  request_id: string | null;
  request_kind: RequestKind | null;
  request_from: string | null;
  request_to: string | null;
  request_status: RequestStatus | null;
  request_body: Uint8Array | null;
  response_body: Uint8Array | null;
  request_answered_by: string | null;
  request_created_at: Date | null;
  request_at: Date | null;
  expires_at: Date | null;
  change: MemberChange | null;
  member_name: string | null;
  role: MemberRole | null;
  member_status: MemberStatus | null;
  permission_mode: PermissionMode | null;
  member_created_at: Date | null;
  member_at: Date | null;
  member_presence: Presence | null;
  member_last_seen_at: Date | null;
  member_last_seen_via: SeenVia | null;
  task_change: TaskChange | null;
  task_id: string | null;
  task_by: string | null;
  task_state: TaskState | null;
  task_status: TaskProgress | null;
  task_owner: string | null;
  task_created_by: string | null;
  task_subject: string | null;
  task_description: string | null;
  task_active_form: string | null;
  task_blocked_by: string[] | null;
  task_open_blockers: string[] | null;
  task_created_at: Date | null;
  task_at: Date | null;
}

// The window's end: the snapshot the cursor names, or this statement's own snapshot (the one
// its reads see, so "visible in upto" and "readable now" are the same set).
const UPTO = "coalesce($3::pg_snapshot, pg_current_snapshot())";

// One source's events in the window, first `limit` by position. The range on feed_xid is what
// the (team_id, feed_xid) index finds: nothing older than since's xmin can be new, nothing from
// upto's xmax on can be in it.
const windowOf = (table: string, columns: string) => `
  (SELECT ${columns} FROM ${table} e
   WHERE e.team_id = $1
     AND e.feed_xid >= pg_snapshot_xmin($2::pg_snapshot)
     AND e.feed_xid < pg_snapshot_xmax(${UPTO})
     AND e.feed_position > $4
     AND pg_visible_in_snapshot(e.feed_xid, ${UPTO})
     AND NOT pg_visible_in_snapshot(e.feed_xid, $2::pg_snapshot)
   ORDER BY e.feed_position LIMIT $5)`;

/**
 * One page of a team's feed window: at most `limit` events, and no more once `maxBytes` of
 * bodies are reached (the first event always comes), so a read holds bounded memory.
 */
export async function readTeamFeed(
  db: Queryable,
  teamId: number,
  window: FeedWindow,
  limit: number,
  maxBytes: number,
): Promise<FeedPage> {
  const rows = await db.query<FeedSqlRow>(
    `WITH picked AS (
       SELECT * FROM (
         ${windowOf("messages", "'envelope' AS source, e.feed_position AS position, e.recipient_id AS member_id, e.seq")}
         UNION ALL
         ${windowOf("request_events", "'request', e.feed_position, NULL::int, NULL::bigint")}
         UNION ALL
         ${windowOf("member_events", "'member', e.feed_position, NULL::int, NULL::bigint")}
         UNION ALL
         ${windowOf("task_events", "'task', e.feed_position, NULL::int, NULL::bigint")}
       ) u
       ORDER BY position LIMIT $5
     ),
     detailed AS (
       SELECT p.source, p.position, rcp.name AS recipient, m.seq, m.from_name, m.to_name,
              m.request_id AS message_request_id, m.message_id, m.body, m.sent_at,
              m.envelope_id, m.thread_id, m.reply_to,
              r.id AS request_id, r.kind AS request_kind, rf.name AS request_from,
              rt.name AS request_to, re.status AS request_status, r.request_body,
              CASE WHEN re.status = 'pending' THEN NULL ELSE r.response_body END AS response_body,
              CASE WHEN re.status = 'pending' THEN NULL ELSE rab.name END AS request_answered_by,
              r.created_at AS request_created_at, re.at AS request_at, r.expires_at,
              me.change, mm.name AS member_name, me.role, me.status AS member_status,
              me.permission_mode, mm.created_at AS member_created_at, me.at AS member_at,
              me.presence AS member_presence, me.last_seen_at AS member_last_seen_at,
              me.last_seen_via AS member_last_seen_via,
              te.change AS task_change, te.task_id, ta.name AS task_by, te.state AS task_state,
              te.status AS task_status, tw.name AS task_owner, tc.name AS task_created_by,
              te.subject AS task_subject, te.description AS task_description,
              te.active_form AS task_active_form, te.blocked_by AS task_blocked_by,
              te.open_blockers AS task_open_blockers, te.created_at AS task_created_at,
              te.at AS task_at,
              coalesce(octet_length(m.body), 0) + coalesce(octet_length(r.request_body), 0)
                + coalesce(octet_length(r.response_body), 0)
                + coalesce(octet_length(te.description), 0) AS size
       FROM picked p
       LEFT JOIN messages m ON p.source = 'envelope' AND m.recipient_id = p.member_id AND m.seq = p.seq
       LEFT JOIN members rcp ON rcp.id = m.recipient_id
       LEFT JOIN request_events re ON p.source = 'request' AND re.feed_position = p.position
       LEFT JOIN requests r ON r.id = re.request_id
       LEFT JOIN members rf ON rf.id = r.from_id
       LEFT JOIN members rt ON rt.id = r.to_id
       LEFT JOIN members rab ON rab.id = r.answered_by
       LEFT JOIN member_events me ON p.source = 'member' AND me.feed_position = p.position
       LEFT JOIN members mm ON mm.id = me.member_id
       LEFT JOIN task_events te ON p.source = 'task' AND te.feed_position = p.position
       LEFT JOIN members ta ON ta.id = te.actor_id
       LEFT JOIN members tw ON tw.id = te.owner_id
       LEFT JOIN members tc ON tc.id = te.created_by
     ),
     page AS (
       SELECT *, sum(size) OVER (ORDER BY position) - size AS before, count(*) OVER () AS fetched
       FROM detailed
     )
     SELECT s.upto, page.* FROM (SELECT ${UPTO}::text AS upto) s
     LEFT JOIN page ON page.before < $6
     ORDER BY page.position`,
    [teamId, window.since, window.upto ?? null, window.after ?? 0n, limit, maxBytes],
  );
  const upto = rows[0]?.upto ?? window.upto ?? window.since;
  const events = rows.filter((r) => r.position !== null).map(toFeedEvent);
  const fetched = Number(rows[0]?.fetched ?? 0);
  return { events, upto, more: fetched === limit || fetched > events.length };
}

/** The current snapshot: a feed from it skips everything already stored (from_now). */
export async function currentSnapshot(db: Queryable): Promise<string> {
  const [row] = await db.query<{ snapshot: string }>(
    "SELECT pg_current_snapshot()::text AS snapshot",
  );
  if (!row) throw new Error("pg_current_snapshot() returned no row");
  return row.snapshot;
}

function toFeedEvent(r: FeedSqlRow): FeedEvent {
  const position = r.position as bigint;
  if (r.source === "envelope") {
    return {
      source: "envelope",
      position,
      at: r.sent_at as Date,
      recipient: r.recipient ?? "",
      seq: r.seq as bigint,
      fromName: r.from_name ?? "",
      toName: r.to_name ?? "",
      requestId: r.message_request_id ?? "",
      messageId: r.message_id ?? "",
      body: r.body as Uint8Array,
      envelopeId: r.envelope_id ?? "",
      threadId: r.thread_id ?? "",
      replyTo: r.reply_to ?? "",
    };
  }
  if (r.source === "request") {
    return {
      source: "request",
      position,
      at: r.request_at as Date,
      request: {
        id: r.request_id as string,
        kind: r.request_kind as RequestKind,
        fromName: r.request_from ?? "",
        toName: r.request_to ?? "",
        status: r.request_status as RequestStatus,
        requestBody: r.request_body as Uint8Array,
        responseBody: r.response_body,
        createdAt: r.request_created_at as Date,
        expiresAt: r.expires_at as Date,
        answeredBy: r.request_answered_by ?? "",
      },
    };
  }
  if (r.source === "task") {
    const openBlockers = r.task_open_blockers ?? [];
    const state = r.task_state as TaskState;
    const status = r.task_status as TaskProgress;
    return {
      source: "task",
      position,
      at: r.task_at as Date,
      change: r.task_change as TaskChange,
      by: r.task_by ?? "",
      task: {
        taskId: r.task_id ?? "",
        state,
        ownerName: r.task_owner ?? "",
        createdAt: r.task_created_at as Date,
        subject: r.task_subject ?? "",
        description: r.task_description ?? "",
        activeForm: r.task_active_form ?? "",
        blockedBy: r.task_blocked_by ?? [],
        openBlockers,
        status,
        ready: state === "unowned" && status === "pending" && openBlockers.length === 0,
        createdByName: r.task_created_by ?? "",
      },
    };
  }
  return {
    source: "member",
    position,
    at: r.member_at as Date,
    change: r.change as MemberChange,
    member: {
      name: r.member_name ?? "",
      role: r.role as MemberRole,
      status: r.member_status as MemberStatus,
      permissionMode: r.permission_mode as PermissionMode,
      createdAt: r.member_created_at as Date,
      presence: r.member_presence,
      lastSeenAt: r.member_last_seen_at,
      lastSeenVia: r.member_last_seen_via,
    },
  };
}
