import { MemberChange } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";
import { clock, describeMessage } from "./describe.js";
import {
  memberChangeName,
  memberRoleName,
  memberStatusName,
  permissionModeName,
  presenceName,
  requestKindName,
  requestStatusName,
  seenViaName,
  taskChangeName,
  taskProgressName,
} from "./names.js";

// The team feed's one renderer: the console shows its parts in columns, `team watch` joins
// them into a line. (Needs no Node API: the console bundles it.)

/** What a team-feed event is about: the console's tag and `team watch`'s colour. */
export type TeamEventKind = "message" | "request" | "member" | "task" | "unknown";

/** One event of the feed: what kind, who it concerns, and what happened. */
export interface FeedLine {
  kind: TeamEventKind;
  /** "alice → team-lead #3", "plan_approval req_… alice → team-lead", "eye (observer)". */
  subject: string;
  /** The message (as describeMessage renders it), the request's status, the change. */
  detail: string;
}

export function describeEvent(event: TeamEvent): FeedLine {
  const change = event.change;
  switch (change.case) {
    case "envelope": {
      const { recipient, envelope } = change.value;
      // A broadcast is one event per recipient: say whose copy this is.
      const to = envelope?.to === recipient ? recipient : `${recipient} (to ${envelope?.to})`;
      return {
        kind: "message",
        subject: `${envelope?.from || "server"} → ${to} #${envelope?.seq ?? 0n}`,
        detail: describeMessage(envelope?.message),
      };
    }
    case "request": {
      const r = change.value.request;
      return {
        kind: "request",
        subject: `${requestKindName(r?.kind ?? 0)} ${r?.requestId ?? ""} ${r?.from} → ${r?.to}`,
        detail: requestStatusName(r?.status ?? 0),
      };
    }
    case "member": {
      const m = change.value.member;
      if (change.value.change === MemberChange.PRESENCE) {
        const via = m?.lastSeenVia ? ` (last seen via ${seenViaName(m.lastSeenVia)})` : "";
        return {
          kind: "member",
          subject: `${m?.name ?? ""} (${memberRoleName(m?.role ?? 0)})`,
          detail: `presence: ${presenceName(m?.presence ?? 0)}${via}`,
        };
      }
      return {
        kind: "member",
        subject: `${m?.name ?? ""} (${memberRoleName(m?.role ?? 0)})`,
        detail:
          `${memberChangeName(change.value.change).replace("_", " ")}: ` +
          `${memberStatusName(m?.status ?? 0)}, mode ${permissionModeName(m?.permissionMode ?? 0)}`,
      };
    }
    case "task": {
      const t = change.value.task;
      const owner = t?.owner ? `, owner ${t.owner}` : "";
      const waits = t?.openBlockers.length ? `, blocked by ${t.openBlockers.join(", ")}` : "";
      return {
        kind: "task",
        subject: `${t?.taskId ?? ""} (${t?.subject ?? ""})`,
        detail:
          `${taskChangeName(change.value.change)} by ${change.value.by}: ` +
          `${taskProgressName(t?.status ?? 0)}${owner}${waits}${t?.ready ? ", ready" : ""}`,
      };
    }
    default:
      // A newer server's event kind: shown, not dropped, so the feed has no silent holes.
      return { kind: "unknown", subject: "", detail: "an event this client does not know" };
  }
}

/**
 * One team-feed event as one line (multi-line messages indented under it), for `team watch`:
 * the time, the kind (but for messages, which are most lines), the subject, the detail.
 *   21:04:05.123Z  alice → team-lead #3  text: done
 *   21:04:05.130Z  request plan_approval req_… alice → team-lead  approved
 *   21:04:05.140Z  member eye (observer)  added: active, mode default
 *   21:04:05.150Z  task 3 (Write the docs)  unblocked by team-lead: pending, ready
 */
export function describeTeamEvent(e: TeamEvent): { kind: TeamEventKind; line: string } {
  const { kind, subject, detail } = describeEvent(e);
  const tag = kind === "message" ? "" : `${kind} `;
  return { kind, line: `${clock(e.at)}  ${tag}${subject ? `${subject}  ` : ""}${detail}` };
}
