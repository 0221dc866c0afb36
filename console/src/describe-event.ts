import { describeMessage } from "../../client/describe.js";
import {
  memberChangeName,
  memberRoleName,
  memberStatusName,
  permissionModeName,
  requestKindName,
  requestStatusName,
} from "../../client/names.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";

/** One line of the feed: what kind of event, who it concerns, and what happened. */
export interface FeedLine {
  kind: "message" | "request" | "member" | "unknown";
  /** "alice → team-lead", "plan_approval req_… alice → team-lead", "alice". */
  subject: string;
  /** The message (as client/describe.ts renders it), the request's status, the change. */
  detail: string;
}

export function describeEvent(event: TeamEvent): FeedLine {
  const change = event.change;
  switch (change.case) {
    case "envelope": {
      const { recipient, envelope } = change.value;
      const from = envelope?.from || "server";
      // A broadcast is one event per recipient: say whose copy this is.
      const to = envelope?.to === recipient ? recipient : `${envelope?.to} (${recipient})`;
      return {
        kind: "message",
        subject: `${from} → ${to} #${envelope?.seq ?? 0n}`,
        detail: describeMessage(envelope?.message),
      };
    }
    case "request": {
      const r = change.value.request;
      return {
        kind: "request",
        subject: `${r ? requestKindName(r.kind) : "request"} ${r?.requestId ?? ""} ${r?.from} → ${r?.to}`,
        detail: r ? requestStatusName(r.status) : "",
      };
    }
    case "member": {
      const m = change.value.member;
      return {
        kind: "member",
        subject: m?.name ?? "",
        detail: m
          ? `${memberChangeName(change.value.change).replace("_", " ")}: ${memberRoleName(m.role)}, ${memberStatusName(m.status)}, ` +
            `mode ${permissionModeName(m.permissionMode)}`
          : memberChangeName(change.value.change),
      };
    }
    default:
      // A newer server's event kind: shown, not dropped, so the feed has no silent holes.
      return { kind: "unknown", subject: "", detail: "an event this console does not know" };
  }
}
