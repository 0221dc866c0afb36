import { type Rule, sent } from "./rule.js";

// Permission prompts: a teammate's runtime asks the lead to allow a tool use; only the lead
// (or an approver on its behalf) answers: lead-only-approval (plan-approval.ts). A deny needs
// a reason: reason-on-reject.

/** permission-to-lead: a teammate's permission prompt goes to the lead. */
export const permissionToLead: Rule = {
  id: "permission-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "permissionRequest") return undefined;
    const lead = call.caller?.lead.name;
    if (m.to !== lead) {
      return {
        sentence: `permission_request must be sent to the team lead "${lead}"`,
        field: "to",
      };
    }
    if (call.caller?.role !== "teammate") {
      return { sentence: "only a teammate asks the lead for permission", field: "to" };
    }
    return undefined;
  },
};
