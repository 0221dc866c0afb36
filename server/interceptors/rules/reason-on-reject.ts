import { type Rule, sent } from "./rule.js";

/** The answers that need a reason when they say no: the case, its yes field, its reason field. */
const ANSWERS: Record<string, { yes: string; field: string; what: string }> = {
  shutdownResponse: {
    yes: "approve",
    field: "message.shutdown_response.reason",
    what: "rejecting a shutdown request",
  },
  taskClaimResponse: {
    yes: "approve",
    field: "message.task_claim_response.reason",
    what: "rejecting a task claim",
  },
  permissionResponse: {
    yes: "allow",
    field: "message.permission_response.reason",
    what: "denying a permission request",
  },
  taskHandoffResponse: {
    yes: "accept",
    field: "message.task_handoff_response.reason",
    what: "declining a task handoff",
  },
};

/** reason-on-reject: rejecting a shutdown, a task claim, a handoff or a permission says why. */
export const reasonOnReject: Rule = {
  id: "reason-on-reject",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    const answer = m ? ANSWERS[m.case] : undefined;
    if (!m || !answer || m.value[answer.yes] || m.value.reason.trim() !== "") return undefined;
    return { sentence: `reason is required when ${answer.what}`, field: answer.field };
  },
};
