import {
  attemptOutcomeWords,
  leaseModeWords,
  memberChangeWords,
  memberRoleWords,
  memberStatusWords,
  permissionModeWords,
  presenceWords,
  requestKindWords,
  requestStatusWords,
  seenViaWords,
  type TaskStatusWord,
  taskChangeWords,
  taskProgressWords,
  taskStateWords,
  taskStatusWords,
} from "@team-protocols/contract/words.js";

// The client's names for the contract's words (gen/words.ts holds the one table).

export type {
  AttemptOutcomeWord as AttemptOutcomeName,
  LeaseModeWord as LeaseModeName,
  MemberRoleWord as MemberRoleName,
  PermissionModeWord as PermissionModeName,
  RequestKindWord as RequestKindName,
  RequestStatusWord as RequestStatusName,
  TaskProgressWord as TaskProgressName,
  TaskStateWord as TaskStateName,
} from "@team-protocols/contract/words.js";

/** The outcomes a member reports; "ready" is written by the server only. */
export type TaskStatusName = Exclude<TaskStatusWord, "ready">;

export const taskStatusNames = taskStatusWords.words.filter(
  (w): w is TaskStatusName => w !== "ready",
);
export const requestStatusNames = requestStatusWords.words;
export const requestKindNames = requestKindWords.words;
export const taskStateNames = taskStateWords.words;
export const taskProgressNames = taskProgressWords.words;
export const permissionModeNames = permissionModeWords.words;
export const attemptOutcomeNames = attemptOutcomeWords.words;
export const leaseModeNames = leaseModeWords.words;

export const taskStatusOf = (name: TaskStatusName) => taskStatusWords.valueOf(name);
export const requestStatusOf = requestStatusWords.valueOf;
export const requestKindOf = requestKindWords.valueOf;
export const taskStateOf = taskStateWords.valueOf;
export const taskProgressOf = taskProgressWords.valueOf;
export const permissionModeOf = permissionModeWords.valueOf;
export const attemptOutcomeOf = attemptOutcomeWords.valueOf;
export const leaseModeOf = leaseModeWords.valueOf;

export const taskStatusName = taskStatusWords.wordOf;
export const requestStatusName = requestStatusWords.wordOf;
export const requestKindName = requestKindWords.wordOf;
export const taskStateName = taskStateWords.wordOf;
export const taskProgressName = taskProgressWords.wordOf;
export const permissionModeName = permissionModeWords.wordOf;
export const attemptOutcomeName = attemptOutcomeWords.wordOf;
export const leaseModeName = leaseModeWords.wordOf;
export const memberRoleName = memberRoleWords.wordOf;
export const memberChangeName = memberChangeWords.wordOf;
export const memberStatusName = memberStatusWords.wordOf;
export const presenceName = presenceWords.wordOf;
export const seenViaName = seenViaWords.wordOf;
export const taskChangeName = taskChangeWords.wordOf;
