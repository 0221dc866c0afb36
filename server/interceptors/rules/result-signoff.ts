import { answersAsLead } from "../../domain/roles.js";
import { type Rule, sent } from "./rule.js";

// Result sign-off: the owner asks the lead to accept its result; only the lead answers.

/** signoff-to-lead: a result goes to the lead for sign-off. */
export const signoffToLead: Rule = {
  id: "signoff-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "resultSignoffRequest") return undefined;
    const lead = call.caller?.lead.name;
    // Stryker disable next-line OptionalChaining: equivalent; with no caller `lead` is undefined
    // and `to` is a string, so `m.to !== lead` holds and the right side is never read.
    if (m.to !== lead || call.caller?.role === "lead") {
      return {
        sentence: `result_signoff_request is sent by a task's owner to the team lead "${lead}"`,
        field: "to",
      };
    }
    return undefined;
  },
};

/** lead-only-signoff: only the lead signs off a result. */
export const leadOnlySignoff: Rule = {
  id: "lead-only-signoff",
  refusal: "permission-denied",
  check(call) {
    const m = sent(call);
    if (m?.case !== "resultSignoffResponse" || answersAsLead(call.caller?.role, m.case)) {
      return undefined;
    }
    return {
      sentence: "only the team lead (or an approver on its behalf) may sign off or reject a result",
    };
  },
};

/** feedback-on-reject: rejecting a result says what to change. */
export const feedbackOnReject: Rule = {
  id: "feedback-on-reject",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "resultSignoffResponse" || m.value.approve || m.value.feedback.trim() !== "") {
      return undefined;
    }
    return {
      sentence: "feedback is required when rejecting a result: say what to change",
      field: "message.result_signoff_response.feedback",
    };
  },
};
