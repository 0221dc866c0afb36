import { type Rule, sent } from "./rule.js";

// Task handoff: the owner passes its task to another member (who owns it is checked in the
// send's transaction: owner-only-handoff).

/** handoff-to-other: a task is handed to someone else. */
export const handoffToOther: Rule = {
  id: "handoff-to-other",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "taskHandoffRequest" || m.to !== call.caller?.name) return undefined;
    return {
      sentence:
        "a task_handoff_request goes to another teammate, or to the lead to give the task back",
      field: "to",
    };
  },
};
