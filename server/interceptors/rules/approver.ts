import { APPROVER_ANSWERS } from "../../domain/roles.js";
import { M, type Rule, sent } from "./rule.js";

// The approver (MEMBER_ROLE_APPROVER): a person who answers the lead's approvals for it.

/** What an approver may call besides its answers: reads of the team and its own inbox. */
const APPROVER_MAY = new Set<unknown>([
  M.listMembers,
  M.listRequests,
  M.getRequest,
  M.awaitRequest,
  M.listAttempts,
  M.getTask,
  M.listTasks,
  M.subscribe,
  M.readInbox,
  M.ack,
]);

/**
 * approver-acts-for-lead: an approver answers the approvals addressed to the lead (plan,
 * permission, task claim, result sign-off) on the lead's behalf, and may send text; nothing
 * else a lead (or a teammate) does. That the answered request was addressed to the lead is
 * checked in the answer's transaction (addressee-only, store/requests.ts).
 */
export const approverActsForLead: Rule = {
  id: "approver-acts-for-lead",
  refusal: "permission-denied",
  check(call) {
    if (call.caller?.role !== "approver" || APPROVER_MAY.has(call.method)) return undefined;
    const m = sent(call);
    if (m && (m.case === "text" || APPROVER_ANSWERS.has(m.case))) return undefined;
    const what = m ? `sending ${snake(m.case)}` : call.method.name;
    return {
      sentence:
        "an approver answers the lead's approvals on its behalf (plan_approval_response, " +
        "permission_response, task_claim_response, result_signoff_response) and sends text; " +
        `nothing else a lead does: ${what} is refused`,
      ...(m ? { field: "message" } : {}),
    };
  },
};

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
