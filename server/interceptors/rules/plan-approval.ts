import { type Rule, sent } from "./rule.js";

// The plan-approval protocol: a teammate submits a plan to the lead; only the lead answers.

/** lead-only-approval: only the lead answers a plan approval request. */
export const leadOnlyApproval: Rule = {
  id: "lead-only-approval",
  refusal: "permission-denied",
  check(call) {
    if (sent(call)?.case !== "planApprovalResponse" || call.caller?.role === "lead") {
      return undefined;
    }
    return { sentence: "only the team lead may approve or reject plans" };
  },
};

/** plan-to-lead: plans are submitted to the lead, by a teammate. */
export const planToLead: Rule = {
  id: "plan-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "planApprovalRequest") return undefined;
    const lead = call.caller?.lead.name;
    if (m.to !== lead) {
      return {
        sentence: `plan_approval_request must be sent to the team lead "${lead}"`,
        field: "to",
      };
    }
    // Stryker disable next-line OptionalChaining: equivalent; with no caller `lead` is undefined
    // and `to` is a string, so the check above has already returned.
    if (call.caller?.role === "lead") {
      return { sentence: "the lead does not submit plans to itself", field: "to" };
    }
    return undefined;
  },
};
