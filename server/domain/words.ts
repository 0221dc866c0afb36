// The store's words for the contract's enums (as stored in the database's text columns).

export type PermissionMode = "default" | "accept_edits" | "bypass_permissions" | "plan";
export type RequestKind =
  | "shutdown"
  | "plan_approval"
  | "task_claim"
  | "task_assign"
  | "task_handoff"
  | "result_signoff";
/** The kinds that wait for an answer (a task_assign is recorded already approved). */
export type AnsweredKind = Exclude<RequestKind, "task_assign">;
export type TaskState = "unowned" | "claimed" | "done";
/** A task's status as stored; in_review is derived when read (a pending result_signoff). */
export type StoredTaskProgress = "pending" | "in_progress" | "completed" | "deleted";
/** A task's status as read. */
export type TaskProgress = StoredTaskProgress | "in_review";
/** What happened to a task (the feed's task events). */
export type TaskChange = "created" | "updated" | "owner" | "completed" | "deleted" | "unblocked";
export type RequestStatus = "pending" | "approved" | "rejected" | "expired" | "canceled";
export type AttemptOutcome = "accepted" | "refused";
