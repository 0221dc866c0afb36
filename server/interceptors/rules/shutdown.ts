import { type Rule, sent } from "./rule.js";

// The graceful-shutdown protocol: the lead asks a teammate; the teammate answers the lead.

/** lead-only-shutdown: only the lead asks a teammate to shut down. */
export const leadOnlyShutdown: Rule = {
  id: "lead-only-shutdown",
  refusal: "permission-denied",
  check(call) {
    if (sent(call)?.case !== "shutdownRequest" || call.caller?.role === "lead") return undefined;
    return { sentence: "only the team lead may send a shutdown_request" };
  },
};

/** shutdown-to-teammate: the lead asks a teammate, not itself. */
export const shutdownToTeammate: Rule = {
  id: "shutdown-to-teammate",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "shutdownRequest" || m.to !== call.caller?.lead.name) return undefined;
    return { sentence: "a shutdown_request goes to a teammate, not to the lead", field: "to" };
  },
};

/** response-to-lead: a shutdown_response is addressed to the lead. */
export const responseToLead: Rule = {
  id: "response-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    const lead = call.caller?.lead.name;
    if (m?.case !== "shutdownResponse" || m.to === lead) return undefined;
    return { sentence: `shutdown_response must be sent to the team lead "${lead}"`, field: "to" };
  },
};
