// What a member's role lets it see and do (the store's words: lead, teammate, observer, approver).

/**
 * The lead, observers and approvers see the whole team: every request, the whole journal.
 * A teammate sees what it is party to. (The team feed, WatchTeam, is the lead's and the
 * observers': rules/observers.ts.)
 */
export const seesWholeTeam = (role: string): boolean =>
  role === "lead" || role === "observer" || role === "approver";

/**
 * The answers an approver gives on the lead's behalf (the Message cases): the approvals
 * addressed to the lead. Everything else a lead does stays the lead's.
 */
export const APPROVER_ANSWERS: ReadonlySet<string> = new Set([
  "planApprovalResponse",
  "permissionResponse",
  "taskClaimResponse",
  "resultSignoffResponse",
]);

/** May this caller answer a request of this Message case as the lead (the lead or an approver)? */
export const answersAsLead = (role: string | undefined, messageCase: string): boolean =>
  role === "lead" || (role === "approver" && APPROVER_ANSWERS.has(messageCase));
