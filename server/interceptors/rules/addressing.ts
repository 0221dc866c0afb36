import { BROADCAST } from "../../domain/names.js";
import { type Rule, sent } from "./rule.js";

/** server-only: request_update is written by the server, never sent by a client. */
export const serverOnly: Rule = {
  id: "server-only",
  refusal: "invalid-argument",
  check(call) {
    if (sent(call)?.case !== "requestUpdate") return undefined;
    return {
      sentence: "request_update messages are written by the server only",
      field: "message.request_update",
    };
  },
};

/** no-broadcast: structured messages go to one member, never to "*". */
export const noBroadcast: Rule = {
  id: "no-broadcast",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (!m || m.case === "text" || m.to !== BROADCAST) return undefined;
    return {
      sentence: 'structured messages cannot be broadcast (to: "*"); address one member',
      field: "to",
    };
  },
};
