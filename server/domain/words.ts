// The store's words for the contract's enums (as stored in the database's text columns): the
// contract's own words (gen/words.ts), so the database, the API and the agents say the same.

import type { RequestKindWord, TaskProgressWord } from "@team-protocols/contract/words.js";

export type {
  AttemptOutcomeWord as AttemptOutcome,
  PermissionModeWord as PermissionMode,
  RequestKindWord as RequestKind,
  RequestStatusWord as RequestStatus,
  TaskChangeWord as TaskChange,
  TaskProgressWord as TaskProgress,
  TaskStateWord as TaskState,
} from "@team-protocols/contract/words.js";

/** The kinds that wait for an answer (a task_assign is recorded already approved). */
export type AnsweredKind = Exclude<RequestKindWord, "task_assign">;
/** A task's status as stored; in_review is derived when read (a pending result_signoff). */
export type StoredTaskProgress = Exclude<TaskProgressWord, "in_review">;
