import {
  AttemptOutcome,
  MemberChange,
  MemberRole,
  MemberStatus,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskChange,
  TaskProgress,
  TaskState,
  TaskStatus,
} from "../gen/team/v1/enums_pb.js";

// The contract's enums as the words agents and people use (Claude Code's agent teams'), both ways.

export type TaskStatusName = "completed" | "failed" | "stopped";
export type RequestStatusName = "pending" | "approved" | "rejected" | "expired" | "canceled";
export type RequestKindName =
  | "shutdown"
  | "plan_approval"
  | "task_claim"
  | "task_assign"
  | "task_handoff"
  | "result_signoff";
export type TaskStateName = "unowned" | "claimed" | "done";
/** A task's status on the task list (Claude Code's words, and in_review). */
export type TaskProgressName = "pending" | "in_progress" | "in_review" | "completed" | "deleted";
export type PermissionModeName = "default" | "accept_edits" | "bypass_permissions" | "plan";
export type AttemptOutcomeName = "accepted" | "refused";

const taskStatuses: Record<TaskStatusName, TaskStatus> = {
  completed: TaskStatus.COMPLETED,
  failed: TaskStatus.FAILED,
  stopped: TaskStatus.STOPPED,
};
const requestStatuses: Record<RequestStatusName, RequestStatus> = {
  pending: RequestStatus.PENDING,
  approved: RequestStatus.APPROVED,
  rejected: RequestStatus.REJECTED,
  expired: RequestStatus.EXPIRED,
  canceled: RequestStatus.CANCELED,
};
const requestKinds: Record<RequestKindName, RequestKind> = {
  shutdown: RequestKind.SHUTDOWN,
  plan_approval: RequestKind.PLAN_APPROVAL,
  task_claim: RequestKind.TASK_CLAIM,
  task_assign: RequestKind.TASK_ASSIGN,
  task_handoff: RequestKind.TASK_HANDOFF,
  result_signoff: RequestKind.RESULT_SIGNOFF,
};
const taskStates: Record<TaskStateName, TaskState> = {
  unowned: TaskState.UNOWNED,
  claimed: TaskState.CLAIMED,
  done: TaskState.DONE,
};
const taskProgresses: Record<TaskProgressName, TaskProgress> = {
  pending: TaskProgress.PENDING,
  in_progress: TaskProgress.IN_PROGRESS,
  in_review: TaskProgress.IN_REVIEW,
  completed: TaskProgress.COMPLETED,
  deleted: TaskProgress.DELETED,
};
const permissionModes: Record<PermissionModeName, PermissionMode> = {
  default: PermissionMode.DEFAULT,
  accept_edits: PermissionMode.ACCEPT_EDITS,
  bypass_permissions: PermissionMode.BYPASS_PERMISSIONS,
  plan: PermissionMode.PLAN,
};

const attemptOutcomes: Record<AttemptOutcomeName, AttemptOutcome> = {
  accepted: AttemptOutcome.ACCEPTED,
  refused: AttemptOutcome.REFUSED,
};

export const taskStatusNames = Object.keys(taskStatuses) as TaskStatusName[];
export const requestStatusNames = Object.keys(requestStatuses) as RequestStatusName[];
export const requestKindNames = Object.keys(requestKinds) as RequestKindName[];
export const taskStateNames = Object.keys(taskStates) as TaskStateName[];
export const taskProgressNames = Object.keys(taskProgresses) as TaskProgressName[];
export const permissionModeNames = Object.keys(permissionModes) as PermissionModeName[];
export const attemptOutcomeNames = Object.keys(attemptOutcomes) as AttemptOutcomeName[];

export const taskStatusOf = (name: TaskStatusName) => taskStatuses[name];
export const requestStatusOf = (name: RequestStatusName) => requestStatuses[name];
export const requestKindOf = (name: RequestKindName) => requestKinds[name];
export const taskStateOf = (name: TaskStateName) => taskStates[name];
export const taskProgressOf = (name: TaskProgressName) => taskProgresses[name];
export const permissionModeOf = (name: PermissionModeName) => permissionModes[name];
export const attemptOutcomeOf = (name: AttemptOutcomeName) => attemptOutcomes[name];

function nameIn<N extends string, V>(table: Record<N, V>, value: V): N | "unspecified" {
  const found = (Object.entries(table) as [N, V][]).find(([, v]) => v === value);
  return found ? found[0] : "unspecified";
}

/** A reported outcome's word; "ready" too, which only the server writes. */
export const taskStatusName = (s: TaskStatus) =>
  s === TaskStatus.READY ? "ready" : nameIn(taskStatuses, s);
export const requestStatusName = (s: RequestStatus) => nameIn(requestStatuses, s);
export const requestKindName = (k: RequestKind) => nameIn(requestKinds, k);
export const taskStateName = (s: TaskState) => nameIn(taskStates, s);
export const taskProgressName = (s: TaskProgress) => nameIn(taskProgresses, s);
export const permissionModeName = (m: PermissionMode) => nameIn(permissionModes, m);
export const attemptOutcomeName = (o: AttemptOutcome) => nameIn(attemptOutcomes, o);
const memberRoles = {
  lead: MemberRole.LEAD,
  teammate: MemberRole.TEAMMATE,
  observer: MemberRole.OBSERVER,
};
export const memberRoleName = (r: MemberRole) => nameIn(memberRoles, r);
const memberChanges = {
  added: MemberChange.ADDED,
  stopped: MemberChange.STOPPED,
  removed: MemberChange.REMOVED,
  permission_mode: MemberChange.PERMISSION_MODE,
};
export const memberChangeName = (c: MemberChange) => nameIn(memberChanges, c);
const taskChanges = {
  created: TaskChange.CREATED,
  updated: TaskChange.UPDATED,
  owner: TaskChange.OWNER,
  completed: TaskChange.COMPLETED,
  deleted: TaskChange.DELETED,
  unblocked: TaskChange.UNBLOCKED,
};
export const taskChangeName = (c: TaskChange) => nameIn(taskChanges, c);
export const memberStatusName = (s: MemberStatus) =>
  s === MemberStatus.ACTIVE ? "active" : s === MemberStatus.STOPPED ? "stopped" : "unspecified";
