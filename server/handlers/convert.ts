import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  EnvelopeStoredSchema,
  MemberChangedSchema,
  RequestChangedSchema,
  TaskChangedSchema,
  type TeamEvent,
  TeamEventSchema,
} from "@team-protocols/contract/team/v1/feed_pb.js";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import {
  type Attempt,
  AttemptSchema,
  type Envelope,
  EnvelopeSchema,
  type Member,
  MemberSchema,
  type RequestRecord,
  RequestRecordSchema,
  type Task,
  TaskSchema,
} from "@team-protocols/contract/team/v1/records_pb.js";
import {
  attemptOutcomeWords,
  memberChangeWords,
  memberRoleWords,
  memberStatusWords,
  permissionModeWords,
  presenceWords,
  requestKindWords,
  requestStatusWords,
  seenViaWords,
  taskChangeWords,
  taskProgressWords,
  taskStateWords,
} from "@team-protocols/contract/words.js";
import type { AttemptRow } from "../store/attempts.js";
import type { StoredMessage } from "../store/inbox.js";
import type { MemberRow } from "../store/members.js";
import type { RequestRow } from "../store/requests.js";
import type { TaskRow } from "../store/tasks.js";
import type { FeedEvent } from "../store/team-feed.js";

// Between the store's rows and the contract's messages.

export function toMember(row: MemberRow): Member {
  return create(MemberSchema, {
    name: row.name,
    role: memberRoleWords.valueOf(row.role),
    status: memberStatusWords.valueOf(row.status),
    permissionMode: permissionModeWords.valueOf(row.permissionMode),
    createdAt: timestampFromDate(row.createdAt),
    ...(row.lastSeenAt ? { lastSeenAt: timestampFromDate(row.lastSeenAt) } : {}),
    presence: presenceWords.valueOf(row.presence),
    ...(row.lastSeenVia ? { lastSeenVia: seenViaWords.valueOf(row.lastSeenVia) } : {}),
  });
}

export function toEnvelope(team: string, m: StoredMessage): Envelope {
  return create(EnvelopeSchema, {
    team,
    seq: m.seq,
    from: m.fromName,
    to: m.toName,
    requestId: m.requestId,
    sentAt: timestampFromDate(m.sentAt),
    message: fromBinary(MessageSchema, m.body),
    messageId: m.messageId,
    id: m.envelopeId,
    threadId: m.threadId,
    replyTo: m.replyTo,
  });
}

/** What a RequestRecord is made of: a stored request, or the state a feed event moved it to. */
type RequestRecordFields = Pick<
  RequestRow,
  | "id"
  | "kind"
  | "teamName"
  | "fromName"
  | "toName"
  | "status"
  | "requestBody"
  | "responseBody"
  | "createdAt"
  | "resolvedAt"
  | "expiresAt"
> &
  Partial<Pick<RequestRow, "answeredBy">>;

export function toRequestRecord(r: RequestRecordFields): RequestRecord {
  return create(RequestRecordSchema, {
    requestId: r.id,
    kind: requestKindWords.valueOf(r.kind),
    team: r.teamName,
    from: r.fromName,
    to: r.toName,
    status: requestStatusWords.valueOf(r.status),
    request: fromBinary(MessageSchema, r.requestBody),
    ...(r.responseBody ? { response: fromBinary(MessageSchema, r.responseBody) } : {}),
    createdAt: timestampFromDate(r.createdAt),
    ...(r.resolvedAt ? { resolvedAt: timestampFromDate(r.resolvedAt) } : {}),
    expiresAt: timestampFromDate(r.expiresAt),
    answeredBy: r.answeredBy ?? "",
  });
}

/** What a Task is made of: a task row as read, or the snapshot a feed event holds. */
type TaskFields = Pick<
  TaskRow,
  | "taskId"
  | "teamName"
  | "state"
  | "ownerName"
  | "createdAt"
  | "updatedAt"
  | "subject"
  | "description"
  | "activeForm"
  | "blockedBy"
  | "openBlockers"
  | "status"
  | "ready"
  | "createdByName"
> & { blocks?: string[] };

export function toTask(t: TaskFields): Task {
  return create(TaskSchema, {
    taskId: t.taskId,
    team: t.teamName,
    state: taskStateWords.valueOf(t.state),
    owner: t.ownerName,
    createdAt: timestampFromDate(t.createdAt),
    updatedAt: timestampFromDate(t.updatedAt),
    subject: t.subject,
    description: t.description,
    activeForm: t.activeForm,
    blockedBy: t.blockedBy,
    blocks: t.blocks ?? [],
    openBlockers: t.openBlockers,
    status: taskProgressWords.valueOf(t.status),
    ready: t.ready,
    createdBy: t.createdByName,
  });
}

export function toAttempt(a: AttemptRow): Attempt {
  return create(AttemptSchema, {
    id: a.id,
    team: a.teamName,
    member: a.memberName,
    at: timestampFromDate(a.at),
    action: a.action,
    to: a.to,
    requestId: a.requestId,
    outcome: attemptOutcomeWords.valueOf(a.outcome),
    rule: a.rule,
    code: a.code,
    message: a.message,
    onBehalfOf: a.onBehalfOf,
  });
}

/** One event of the team feed as WatchTeam sends it. */
export function toTeamEvent(team: string, e: FeedEvent): TeamEvent {
  const base = { position: e.position, at: timestampFromDate(e.at) };
  switch (e.source) {
    case "envelope":
      return create(TeamEventSchema, {
        ...base,
        change: {
          case: "envelope",
          value: create(EnvelopeStoredSchema, {
            recipient: e.recipient,
            envelope: toEnvelope(team, {
              seq: e.seq,
              fromName: e.fromName,
              toName: e.toName,
              requestId: e.requestId,
              messageId: e.messageId,
              kind: "",
              body: e.body,
              sentAt: e.at,
              envelopeId: e.envelopeId,
              threadId: e.threadId,
              replyTo: e.replyTo,
            }),
          }),
        },
      });
    case "request": {
      const r = e.request;
      return create(TeamEventSchema, {
        ...base,
        change: {
          case: "request",
          value: create(RequestChangedSchema, {
            // The record as this event left it: resolved at the event when it ended it.
            request: toRequestRecord({
              ...r,
              teamName: team,
              resolvedAt: r.status === "pending" ? null : e.at,
            }),
          }),
        },
      });
    }
    case "task":
      return create(TeamEventSchema, {
        ...base,
        change: {
          case: "task",
          value: create(TaskChangedSchema, {
            change: taskChangeWords.valueOf(e.change),
            // As the change left it; updated then.
            task: toTask({ ...e.task, teamName: team, updatedAt: e.at }),
            by: e.by,
          }),
        },
      });
    case "member":
      return create(TeamEventSchema, {
        ...base,
        change: {
          case: "member",
          value: create(MemberChangedSchema, {
            change: memberChangeWords.valueOf(e.change),
            member: create(MemberSchema, {
              name: e.member.name,
              role: memberRoleWords.valueOf(e.member.role),
              status: memberStatusWords.valueOf(e.member.status),
              permissionMode: permissionModeWords.valueOf(e.member.permissionMode),
              createdAt: timestampFromDate(e.member.createdAt),
              ...(e.member.presence ? { presence: presenceWords.valueOf(e.member.presence) } : {}),
              ...(e.member.lastSeenAt
                ? { lastSeenAt: timestampFromDate(e.member.lastSeenAt) }
                : {}),
              ...(e.member.lastSeenVia
                ? { lastSeenVia: seenViaWords.valueOf(e.member.lastSeenVia) }
                : {}),
            }),
          }),
        },
      });
  }
}

/**
 * An enum field's word, which the rules table (size-shape) has already checked: a value outside
 * the enum never reaches a handler, so undefined here is a bug, not bad input.
 */
export function checkedByRules<W>(word: W | undefined, field: string): W {
  if (word === undefined) throw new Error(`${field} passed the rules table outside its enum`);
  return word;
}
