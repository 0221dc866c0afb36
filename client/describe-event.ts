import type { TeamEvent } from "../gen/team/v1/feed_pb.js";
import { clock, describeMessage } from "./describe.js";
import {
  memberChangeName,
  memberRoleName,
  memberStatusName,
  permissionModeName,
  requestKindName,
  requestStatusName,
} from "./names.js";

/** What a team-feed event is about: for colouring a line by its kind. */
export type TeamEventKind = "envelope" | "request" | "member";

/**
 * One team-feed event as one line (multi-line messages indented under it), for `team watch`:
 *   21:04:05.123Z  alice → team-lead #3  text: done
 *   21:04:05.130Z  request req_… (plan_approval alice → team-lead) approved
 *   21:04:05.140Z  member eye (observer) added: active, mode default
 */
export function describeTeamEvent(e: TeamEvent): { kind: TeamEventKind; line: string } {
  const at = clock(e.at);
  switch (e.change.case) {
    case "envelope": {
      const { recipient, envelope } = e.change.value;
      const to = envelope?.to === recipient ? recipient : `${recipient} (to ${envelope?.to})`;
      return {
        kind: "envelope",
        line: `${at}  ${envelope?.from || "server"} → ${to} #${envelope?.seq}  ${describeMessage(envelope?.message)}`,
      };
    }
    case "request": {
      const r = e.change.value.request;
      return {
        kind: "request",
        line: `${at}  request ${r?.requestId} (${requestKindName(r?.kind ?? 0)} ${r?.from} → ${r?.to}) ${requestStatusName(r?.status ?? 0)}`,
      };
    }
    case "member": {
      const { change, member: m } = e.change.value;
      return {
        kind: "member",
        line: `${at}  member ${m?.name} (${memberRoleName(m?.role ?? 0)}) ${memberChangeName(change)}: ${memberStatusName(m?.status ?? 0)}, mode ${permissionModeName(m?.permissionMode ?? 0)}`,
      };
    }
    default:
      return { kind: "envelope", line: `${at}  (an event this client does not know)` };
  }
}
