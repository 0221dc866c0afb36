import { answersAsLead } from "../../domain/roles.js";
import { type Rule, sent } from "./rule.js";

// Task claim and assignment: a teammate asks the lead for a task, or the lead gives one.

/** claim-to-lead: a teammate claims a task from the lead. */
export const claimToLead: Rule = {
  id: "claim-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "taskClaimRequest") return undefined;
    const lead = call.caller?.lead.name;
    if (m.to !== lead) {
      return {
        sentence: `task_claim_request must be sent to the team lead "${lead}"`,
        field: "to",
      };
    }
    // Stryker disable next-line OptionalChaining: equivalent; with no caller `lead` is undefined
    // and `to` is a string, so the check above has already returned.
    if (call.caller?.role === "lead") {
      return {
        sentence: "the lead does not claim tasks: it assigns them (task_assign)",
        field: "to",
      };
    }
    return undefined;
  },
};

/** lead-only-assign: only the lead gives tasks, by answering a claim or by assigning one. */
export const leadOnlyAssign: Rule = {
  id: "lead-only-assign",
  refusal: "permission-denied",
  check(call) {
    const m = sent(call);
    if (
      (m?.case !== "taskClaimResponse" && m?.case !== "taskAssign") ||
      answersAsLead(call.caller?.role, m.case)
    ) {
      return undefined;
    }
    return {
      sentence:
        m.case === "taskAssign"
          ? "only the team lead may assign tasks; claim one from the lead instead (task_claim_request)"
          : "only the team lead (or an approver on its behalf) may approve or reject task claims",
    };
  },
};

/** assign-to-teammate: the lead assigns a task to a teammate, not to itself. */
export const assignToTeammate: Rule = {
  id: "assign-to-teammate",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "taskAssign" || m.to !== call.caller?.lead.name) return undefined;
    return { sentence: "a task_assign goes to a teammate, not to the lead", field: "to" };
  },
};
