// The store's words for the contract's enums (as stored in the database's text columns).

export type PermissionMode = "default" | "accept_edits" | "bypass_permissions" | "plan";
export type RequestKind = "shutdown" | "plan_approval";
export type RequestStatus = "pending" | "approved" | "rejected" | "expired" | "canceled";
export type AttemptOutcome = "accepted" | "refused";
