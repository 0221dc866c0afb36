import {
  AttemptOutcome as AttemptOutcomeEnum,
  PermissionMode as PermissionModeEnum,
  RequestKind as RequestKindEnum,
  RequestStatus as RequestStatusEnum,
  TaskChange as TaskChangeEnum,
  TaskProgress as TaskProgressEnum,
  TaskState as TaskStateEnum,
} from "../../gen/team/v1/enums_pb.js";
import type {
  AttemptOutcome,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskChange,
  TaskProgress,
  TaskState,
} from "./words.js";

// Between the store's words and the contract's enums.

export const permissionModes: Record<PermissionMode, PermissionModeEnum> = {
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

export const requestKinds: Record<RequestKind, RequestKindEnum> = {
  shutdown: RequestKindEnum.SHUTDOWN,
  plan_approval: RequestKindEnum.PLAN_APPROVAL,
  task_claim: RequestKindEnum.TASK_CLAIM,
  task_assign: RequestKindEnum.TASK_ASSIGN,
  task_handoff: RequestKindEnum.TASK_HANDOFF,
  result_signoff: RequestKindEnum.RESULT_SIGNOFF,
};

export const requestStatuses: Record<RequestStatus, RequestStatusEnum> = {
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

export const taskStates: Record<TaskState, TaskStateEnum> = {
  unowned: TaskStateEnum.UNOWNED,
  claimed: TaskStateEnum.CLAIMED,
  done: TaskStateEnum.DONE,
};

export const taskStateFromProto = (state: TaskStateEnum) => filterWord(taskStates, state);

export const attemptOutcomes: Record<AttemptOutcome, AttemptOutcomeEnum> = {
  accepted: AttemptOutcomeEnum.ACCEPTED,
  refused: AttemptOutcomeEnum.REFUSED,
};

export const attemptOutcomeFromProto = (outcome: AttemptOutcomeEnum) =>
  filterWord(attemptOutcomes, outcome);

export const taskProgresses: Record<TaskProgress, TaskProgressEnum> = {
  pending: TaskProgressEnum.PENDING,
  in_progress: TaskProgressEnum.IN_PROGRESS,
  in_review: TaskProgressEnum.IN_REVIEW,
  completed: TaskProgressEnum.COMPLETED,
  deleted: TaskProgressEnum.DELETED,
};

export const taskProgressFromProto = (status: TaskProgressEnum) =>
  filterWord(taskProgresses, status);

export const taskChanges: Record<TaskChange, TaskChangeEnum> = {
  created: TaskChangeEnum.CREATED,
  updated: TaskChangeEnum.UPDATED,
  owner: TaskChangeEnum.OWNER,
  completed: TaskChangeEnum.COMPLETED,
  deleted: TaskChangeEnum.DELETED,
  unblocked: TaskChangeEnum.UNBLOCKED,
};
