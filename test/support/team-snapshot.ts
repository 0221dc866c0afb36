import { createHash } from "node:crypto";
import type { Queryable } from "../../server/store/database.js";

/**
 * Every stored row of one team, read with SQL (not through the API under test), so a test can
 * say exactly what a series of calls changed: members (status, role, mode, token hash, ack
 * cursor), inboxes (last seq), messages, protocol requests, tasks, leases and idempotency
 * keys.
 * last_seen_at is left out: it records authenticated calls, refused ones included, by design.
 */
export interface TeamSnapshot {
  team: string;
  members: Map<string, MemberSnap>;
  /** Key: `${recipient}#${seq}`. */
  messages: Map<string, MessageSnap>;
  requests: Map<string, RequestSnap>;
  /** Key: task id. */
  tasks: Map<string, TaskSnap>;
  /** `${sender}#${message_id}` of the sends table (idempotency keys). */
  sends: Set<string>;
  /** `${holder} ${mode} ${resource} until ${expires_at}` of every lease row, lapsed too. */
  leases: Set<string>;
}

export interface MemberSnap {
  role: string;
  status: string;
  permissionMode: string;
  tokenHash: string;
  ackedSeq: bigint;
  lastSeq: bigint;
}

export interface MessageSnap {
  recipient: string;
  seq: bigint;
  /** null for messages the server wrote itself (request_update). */
  sender: string | null;
  fromName: string;
  toName: string;
  kind: string;
  requestId: string | null;
  messageId: string | null;
  bodyHash: string;
}

export interface RequestSnap {
  kind: string;
  from: string;
  to: string;
  /** The stored status (a pending request past its deadline still says pending). */
  status: string;
  expiresAt: Date;
  requestHash: string;
  responseHash: string | null;
  /** The task a task protocol's request names; null for the others. */
  taskId: string | null;
}

export interface TaskSnap {
  state: string;
  /** "" while unowned. */
  owner: string;
  status: string;
  subject: string;
  description: string;
  activeForm: string;
  /** The ids it waits on, in id order, joined by spaces. */
  blockedBy: string;
}

const hash = (b: Uint8Array | null) =>
  b === null ? null : createHash("sha256").update(b).digest("hex").slice(0, 16);

export async function snapshotTeam(db: Queryable, team: string): Promise<TeamSnapshot> {
  const members = await db.query<{
    name: string;
    role: string;
    status: string;
    permission_mode: string;
    token_hash: Uint8Array;
    acked_seq: bigint;
    last_seq: bigint;
  }>(
    `SELECT m.name, m.role, m.status, m.permission_mode, m.token_hash, m.acked_seq, i.last_seq
     FROM members m JOIN teams t ON t.id = m.team_id JOIN inboxes i ON i.member_id = m.id
     WHERE t.name = $1 ORDER BY m.id`,
    [team],
  );
  const messages = await db.query<{
    recipient: string;
    seq: bigint;
    sender: string | null;
    from_name: string;
    to_name: string;
    kind: string;
    request_id: string | null;
    message_id: string | null;
    body: Uint8Array;
  }>(
    `SELECT r.name AS recipient, x.seq, s.name AS sender, x.from_name, x.to_name, x.kind,
            x.request_id, x.message_id, x.body
     FROM messages x JOIN teams t ON t.id = x.team_id
     JOIN members r ON r.id = x.recipient_id LEFT JOIN members s ON s.id = x.sender_id
     WHERE t.name = $1`,
    [team],
  );
  const requests = await db.query<{
    id: string;
    kind: string;
    from_name: string;
    to_name: string;
    status: string;
    expires_at: Date;
    request_body: Uint8Array;
    response_body: Uint8Array | null;
    task_id: string | null;
  }>(
    `SELECT q.id, q.kind, f.name AS from_name, a.name AS to_name, q.status, q.expires_at,
            q.request_body, q.response_body, q.task_id
     FROM requests q JOIN teams t ON t.id = q.team_id
     JOIN members f ON f.id = q.from_id JOIN members a ON a.id = q.to_id
     WHERE t.name = $1`,
    [team],
  );
  const tasks = await db.query<{
    task_id: string;
    state: string;
    owner: string | null;
    status: string;
    subject: string;
    description: string;
    active_form: string;
    blocked_by: string;
  }>(
    `SELECT k.task_id, k.state, o.name AS owner, k.status, k.subject, k.description,
            k.active_form,
            coalesce((SELECT string_agg(d.blocked_by, ' ' ORDER BY d.blocked_by)
                      FROM task_dependencies d
                      WHERE d.team_id = k.team_id AND d.task_id = k.task_id), '') AS blocked_by
     FROM tasks k JOIN teams t ON t.id = k.team_id
     LEFT JOIN members o ON o.id = k.owner_id WHERE t.name = $1`,
    [team],
  );
  const sends = await db.query<{ sender: string; message_id: string }>(
    `SELECT m.name AS sender, s.message_id FROM sends s
     JOIN members m ON m.id = s.sender_id JOIN teams t ON t.id = m.team_id WHERE t.name = $1`,
    [team],
  );
  const leases = await db.query<{ line: string }>(
    `SELECT m.name || ' ' || l.mode || ' ' || l.resource || ' until ' || l.expires_at AS line
     FROM leases l JOIN members m ON m.id = l.holder_id JOIN teams t ON t.id = l.team_id
     WHERE t.name = $1`,
    [team],
  );
  return {
    team,
    leases: new Set(leases.map((l) => l.line)),
    members: new Map(
      members.map((m) => [
        m.name,
        {
          role: m.role,
          status: m.status,
          permissionMode: m.permission_mode,
          tokenHash: hash(m.token_hash) ?? "",
          ackedSeq: BigInt(m.acked_seq),
          lastSeq: BigInt(m.last_seq),
        },
      ]),
    ),
    messages: new Map(
      messages.map((m) => [
        `${m.recipient}#${m.seq}`,
        {
          recipient: m.recipient,
          seq: BigInt(m.seq),
          sender: m.sender,
          fromName: m.from_name,
          toName: m.to_name,
          kind: m.kind,
          requestId: m.request_id,
          messageId: m.message_id,
          bodyHash: hash(m.body) ?? "",
        },
      ]),
    ),
    requests: new Map(
      requests.map((r) => [
        r.id,
        {
          kind: r.kind,
          from: r.from_name,
          to: r.to_name,
          status: r.status,
          expiresAt: r.expires_at,
          requestHash: hash(r.request_body) ?? "",
          responseHash: hash(r.response_body),
          taskId: r.task_id,
        },
      ]),
    ),
    tasks: new Map(
      tasks.map((k) => [
        k.task_id,
        {
          state: k.state,
          owner: k.owner ?? "",
          status: k.status,
          subject: k.subject,
          description: k.description,
          activeForm: k.active_form,
          blockedBy: k.blocked_by,
        },
      ]),
    ),
    sends: new Set(sends.map((s) => `${s.sender}#${s.message_id}`)),
  };
}

/** What changed between two snapshots of one team, as data. */
export interface TeamDiff {
  newMembers: string[];
  /** name -> the fields that changed, before and after. */
  changedMembers: Map<string, { before: MemberSnap; after: MemberSnap; fields: string[] }>;
  goneMembers: string[];
  newMessages: MessageSnap[];
  /** Rows that changed or disappeared (stored messages are immutable: always a finding). */
  alteredMessages: string[];
  newRequests: string[];
  changedRequests: Map<string, { before: RequestSnap; after: RequestSnap; fields: string[] }>;
  goneRequests: string[];
  newTasks: string[];
  /** task id -> before and after, and the fields that changed. */
  changedTasks: Map<string, { before: TaskSnap; after: TaskSnap; fields: string[] }>;
  goneTasks: string[];
  newSends: string[];
  goneSends: string[];
  newLeases: string[];
  goneLeases: string[];
  /** Inboxes whose messages are not exactly seqs 1..last_seq. */
  gaps: string[];
}

const fieldsThatDiffer = <T extends object>(a: T, b: T) =>
  (Object.keys(a) as (keyof T)[])
    .filter((k) => {
      const x = a[k];
      const y = b[k];
      return x instanceof Date && y instanceof Date ? x.getTime() !== y.getTime() : x !== y;
    })
    .map(String);

export function diffSnapshots(before: TeamSnapshot, after: TeamSnapshot): TeamDiff {
  const changedMembers: TeamDiff["changedMembers"] = new Map();
  for (const [name, a] of after.members) {
    const b = before.members.get(name);
    if (!b) continue;
    const fields = fieldsThatDiffer(b, a);
    if (fields.length > 0) changedMembers.set(name, { before: b, after: a, fields });
  }
  const changedRequests: TeamDiff["changedRequests"] = new Map();
  for (const [id, a] of after.requests) {
    const b = before.requests.get(id);
    if (!b) continue;
    const fields = fieldsThatDiffer(b, a);
    if (fields.length > 0) changedRequests.set(id, { before: b, after: a, fields });
  }
  const changedTasks: TeamDiff["changedTasks"] = new Map();
  for (const [id, a] of after.tasks) {
    const b = before.tasks.get(id);
    const fields = b ? fieldsThatDiffer(b, a) : [];
    if (b && fields.length > 0) changedTasks.set(id, { before: b, after: a, fields });
  }
  const alteredMessages: string[] = [];
  for (const [key, b] of before.messages) {
    const a = after.messages.get(key);
    if (!a) alteredMessages.push(`${key} disappeared`);
    else if (fieldsThatDiffer(b, a).length > 0) {
      alteredMessages.push(`${key} changed: ${fieldsThatDiffer(b, a).join(", ")}`);
    }
  }
  const gaps: string[] = [];
  for (const [name, m] of after.members) {
    const seqs = [...after.messages.values()]
      .filter((x) => x.recipient === name)
      .map((x) => x.seq)
      .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const contiguous = seqs.every((s, i) => s === BigInt(i + 1));
    if (!contiguous || BigInt(seqs.length) !== m.lastSeq) {
      gaps.push(`${name}: ${seqs.length} messages, last_seq ${m.lastSeq}`);
    }
  }
  return {
    newMembers: [...after.members.keys()].filter((n) => !before.members.has(n)),
    changedMembers,
    goneMembers: [...before.members.keys()].filter((n) => !after.members.has(n)),
    newMessages: [...after.messages.entries()]
      .filter(([k]) => !before.messages.has(k))
      .map(([, m]) => m),
    alteredMessages,
    newRequests: [...after.requests.keys()].filter((id) => !before.requests.has(id)),
    changedRequests,
    goneRequests: [...before.requests.keys()].filter((id) => !after.requests.has(id)),
    newTasks: [...after.tasks.keys()].filter((id) => !before.tasks.has(id)),
    changedTasks,
    goneTasks: [...before.tasks.keys()].filter((id) => !after.tasks.has(id)),
    newSends: [...after.sends].filter((s) => !before.sends.has(s)),
    goneSends: [...before.sends].filter((s) => !after.sends.has(s)),
    newLeases: [...after.leases].filter((l) => !before.leases.has(l)),
    goneLeases: [...before.leases].filter((l) => !after.leases.has(l)),
    gaps,
  };
}

/** Every change of a diff, one line each ([] when the team's rows are unchanged). */
export function describeDiff(d: TeamDiff): string[] {
  return [
    ...d.newLeases.map((l) => `new lease: ${l}`),
    ...d.goneLeases.map((l) => `lease gone or changed: ${l}`),
    ...d.newMembers.map((n) => `new member ${n}`),
    ...[...d.changedMembers].map(
      ([n, c]) =>
        `member ${n}: ${c.fields.map((f) => `${f} ${String(c.before[f as keyof MemberSnap])} -> ${String(c.after[f as keyof MemberSnap])}`).join(", ")}`,
    ),
    ...d.goneMembers.map((n) => `member ${n} disappeared`),
    ...d.newMessages.map(
      (m) => `new message ${m.recipient}#${m.seq} (${m.kind} from ${m.sender ?? "server"})`,
    ),
    ...d.alteredMessages.map((m) => `message ${m}`),
    ...d.newRequests.map((r) => `new request ${r}`),
    ...[...d.changedRequests].map(
      ([id, c]) =>
        `request ${id}: ${c.fields.map((f) => `${f} ${String(c.before[f as keyof RequestSnap])} -> ${String(c.after[f as keyof RequestSnap])}`).join(", ")}`,
    ),
    ...d.goneRequests.map((r) => `request ${r} disappeared`),
    ...d.newTasks.map((k) => `new task ${k}`),
    ...[...d.changedTasks].map(
      ([k, c]) =>
        `task ${k}: ${c.fields.map((f) => `${f} ${String(c.before[f as keyof TaskSnap]) || "-"} -> ${String(c.after[f as keyof TaskSnap]) || "-"}`).join(", ")}`,
    ),
    ...d.goneTasks.map((k) => `task ${k} disappeared`),
    ...d.newSends.map((s) => `new idempotency key ${s}`),
    ...d.goneSends.map((s) => `idempotency key ${s} disappeared`),
    ...d.gaps.map((g) => `inbox not gapless: ${g}`),
  ];
}
