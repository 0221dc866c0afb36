import { type Rule, sent } from "./rule.js";

/** task-to-lead: task notifications report to the lead. */
export const taskToLead: Rule = {
  id: "task-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    const lead = call.caller?.lead.name;
    if (m?.case !== "taskNotification" || m.to === lead) return undefined;
    return { sentence: `task_notification must be sent to the team lead "${lead}"`, field: "to" };
  },
};
