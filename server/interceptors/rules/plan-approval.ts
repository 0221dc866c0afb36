import { answersAsLead } from "../../domain/roles.js";
import { type Rule, sent } from "./rule.js";

// The plan-approval protocol: a teammate submits a plan to the lead; only the lead answers.
// lead-only-approval covers permission prompts too (rules/permission.ts): the same approval.

/**
 * lead-only-approval: only the lead (or an approver on its behalf) answers a plan approval
 * request or a permission request.
 */
export const leadOnlyApproval: Rule = {
  id: "lead-only-approval",
  refusal: "permission-denied",
  check(call) {
    const m = sent(call);
    if (
      (m?.case !== "planApprovalResponse" && m?.case !== "permissionResponse") ||
      answersAsLead(call.caller?.role, m.case)
    ) {
      return undefined;
    }
    return {
      sentence:
        m.case === "permissionResponse"
          ? "only the team lead (or an approver on its behalf) may allow or deny a permission request"
          : "only the team lead (or an approver on its behalf) may approve or reject plans",
    };
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
