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
export type RequestStatus = "pending" | "approved" | "rejected" | "expired" | "canceled";
export type AttemptOutcome = "accepted" | "refused";
