import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AttemptOutcome as AttemptOutcomeEnum,
  MemberRole as MemberRoleEnum,
  MemberStatus as MemberStatusEnum,
  PermissionMode as PermissionModeEnum,
  RequestKind as RequestKindEnum,
  RequestStatus as RequestStatusEnum,
} from "../../gen/team/v1/enums_pb.js";
import { MessageSchema } from "../../gen/team/v1/message_pb.js";
import {
  type Attempt,
  AttemptSchema,
  type Envelope,
  EnvelopeSchema,
  type Member,
  MemberSchema,
  type RequestRecord,
  RequestRecordSchema,
} from "../../gen/team/v1/records_pb.js";
import type { AttemptOutcome, AttemptRow } from "../store/attempts.js";
import type { StoredMessage } from "../store/inbox.js";
import type { MemberRow, PermissionMode } from "../store/members.js";
import type { RequestKind, RequestRow, RequestStatus } from "../store/requests.js";

// Between the store's words and the contract's enums and messages.

const permissionModes: Record<PermissionMode, PermissionModeEnum> = {
  default: PermissionModeEnum.DEFAULT,
  accept_edits: PermissionModeEnum.ACCEPT_EDITS,
  bypass_permissions: PermissionModeEnum.BYPASS_PERMISSIONS,
  plan: PermissionModeEnum.PLAN,
};

export const permissionModeToProto = (mode: PermissionMode) => permissionModes[mode];

/** UNSPECIFIED means "the default". */
export function permissionModeFromProto(mode: PermissionModeEnum): PermissionMode | undefined {
  if (mode === PermissionModeEnum.UNSPECIFIED) return "default";
  const found = Object.entries(permissionModes).find(([, v]) => v === mode);
  return found ? (found[0] as PermissionMode) : undefined;
}

export function toMember(row: MemberRow): Member {
  return create(MemberSchema, {
    name: row.name,
    role: row.role === "lead" ? MemberRoleEnum.LEAD : MemberRoleEnum.TEAMMATE,
    status: row.status === "active" ? MemberStatusEnum.ACTIVE : MemberStatusEnum.STOPPED,
    permissionMode: permissionModes[row.permissionMode],
    createdAt: timestampFromDate(row.createdAt),
    ...(row.lastSeenAt ? { lastSeenAt: timestampFromDate(row.lastSeenAt) } : {}),
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
  });
}

const requestKinds: Record<RequestKind, RequestKindEnum> = {
  shutdown: RequestKindEnum.SHUTDOWN,
  plan_approval: RequestKindEnum.PLAN_APPROVAL,
};

const requestStatuses: Record<RequestStatus, RequestStatusEnum> = {
  pending: RequestStatusEnum.PENDING,
  approved: RequestStatusEnum.APPROVED,
  rejected: RequestStatusEnum.REJECTED,
  expired: RequestStatusEnum.EXPIRED,
  canceled: RequestStatusEnum.CANCELED,
};

export const requestKindToProto = (kind: RequestKind) => requestKinds[kind];
export const requestStatusToProto = (status: RequestStatus) => requestStatuses[status];

/**
 * A filter's enum value as the store's word: null for UNSPECIFIED (0, "any"), undefined for a
 * value outside the enum (proto3 enums are open: a client may send any number).
 */
function filterWord<W extends string>(
  table: Record<W, number>,
  value: number,
): W | null | undefined {
  if (value === 0) return null;
  const found = (Object.entries(table) as [W, number][]).find(([, v]) => v === value);
  return found ? found[0] : undefined;
}

export const requestKindFromProto = (kind: RequestKindEnum) => filterWord(requestKinds, kind);
export const requestStatusFromProto = (status: RequestStatusEnum) =>
  filterWord(requestStatuses, status);

export function toRequestRecord(r: RequestRow): RequestRecord {
  return create(RequestRecordSchema, {
    requestId: r.id,
    kind: requestKinds[r.kind],
    team: r.teamName,
    from: r.fromName,
    to: r.toName,
    status: requestStatuses[r.status],
    request: fromBinary(MessageSchema, r.requestBody),
    ...(r.responseBody ? { response: fromBinary(MessageSchema, r.responseBody) } : {}),
    createdAt: timestampFromDate(r.createdAt),
    ...(r.resolvedAt ? { resolvedAt: timestampFromDate(r.resolvedAt) } : {}),
    expiresAt: timestampFromDate(r.expiresAt),
  });
}

const attemptOutcomes: Record<AttemptOutcome, AttemptOutcomeEnum> = {
  accepted: AttemptOutcomeEnum.ACCEPTED,
  refused: AttemptOutcomeEnum.REFUSED,
};

export const attemptOutcomeFromProto = (outcome: AttemptOutcomeEnum) =>
  filterWord(attemptOutcomes, outcome);

export function toAttempt(a: AttemptRow): Attempt {
  return create(AttemptSchema, {
    id: a.id,
    team: a.teamName,
    member: a.memberName,
    at: timestampFromDate(a.at),
    action: a.action,
    to: a.to,
    requestId: a.requestId,
    outcome: attemptOutcomes[a.outcome],
    rule: a.rule,
    code: a.code,
    message: a.message,
  });
}
