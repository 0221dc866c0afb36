import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Message } from "@team-protocols/contract/team/v1/message_pb.js";
import type {
  Envelope,
  Member,
  RequestRecord,
  Task,
} from "@team-protocols/contract/team/v1/records_pb.js";
import {
  permissionModeName,
  presenceName,
  requestKindName,
  requestStatusName,
  seenViaName,
  taskProgressName,
  taskStateName,
  taskStatusName,
} from "./names.js";

// Short, human-readable renderings for terminals and transcripts (toPromptText is the one
// for models).

/** "21:04:05.123Z" */
export const clock = (t: Timestamp | undefined) =>
  t ? `${timestampDate(t).toISOString().slice(11, 23)}Z` : "-";

/** "2025-11-29T21:04:05.123Z" */
export const instant = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "-");

/** "online, last seen 2026-12-04T16:01:02.000Z via mcp", or "offline, never seen". */
export const describePresence = (m: Pick<Member, "presence" | "lastSeenAt" | "lastSeenVia">) =>
  m.lastSeenAt
    ? `${presenceName(m.presence)}, last seen ${instant(m.lastSeenAt)} via ${seenViaName(m.lastSeenVia)}`
    : `${presenceName(m.presence)}, never seen`;

/** One envelope: a header line, then the message (multi-line text indented). */
export function describeEnvelope(e: Envelope): string {
  const head = `#${e.seq} ${clock(e.sentAt)} ${e.from || "server"} → ${e.to}`;
  return `${head}  ${describeMessage(e.message)}`;
}

/** What a message says, in one line where it can. */
export function describeMessage(message: Message | undefined): string {
  const kind = message?.kind ?? { case: undefined };
  switch (kind.case) {
    case "text":
      return `text: ${indentRest(kind.value)}`;
    case "shutdownRequest":
      return `shutdown_request${kind.value.reason ? `: ${indentRest(kind.value.reason)}` : ""}`;
    case "shutdownResponse":
      return `shutdown_response ${kind.value.requestId} ${
        kind.value.approve ? "approved" : `rejected: ${indentRest(kind.value.reason)}`
      }`;
    case "planApprovalRequest":
      return `plan_approval_request:\n${indent(kind.value.plan)}`;
    case "planApprovalResponse": {
      const r = kind.value;
      const verdict = r.approve
        ? `approved (permission mode ${permissionModeName(r.permissionMode)})`
        : "rejected";
      return `plan_approval_response ${r.requestId} ${verdict}${r.feedback ? `: ${indentRest(r.feedback)}` : ""}`;
    }
    case "taskNotification": {
      const n = kind.value;
      const usage = n.usage
        ? ` [${n.usage.totalTokens} tokens, ${n.usage.toolUses} tool uses, ${n.usage.durationMs} ms]`
        : "";
      const result = n.result ? `\n${indent(n.result)}` : "";
      return `task_notification ${n.taskId} ${taskStatusName(n.status)}: ${n.summary}${usage}${result}`;
    }
    case "taskClaimRequest":
      return `task_claim_request ${kind.value.taskId}${note(kind.value.note)}`;
    case "taskClaimResponse":
      return `task_claim_response ${verdict(kind.value.requestId, kind.value.approve, kind.value.reason)}`;
    case "taskAssign":
      return `task_assign ${kind.value.taskId}${note(kind.value.note)}`;
    case "taskHandoffRequest":
      return `task_handoff_request ${kind.value.taskId}${note(kind.value.note)}`;
    case "taskHandoffResponse":
      return `task_handoff_response ${verdict(kind.value.requestId, kind.value.accept, kind.value.reason, ["accepted", "declined"])}`;
    case "resultSignoffRequest": {
      const r = kind.value;
      return `result_signoff_request ${r.taskId}${note(r.summary)}${r.result ? `\n${indent(r.result)}` : ""}`;
    }
    case "resultSignoffResponse": {
      const r = kind.value;
      return `result_signoff_response ${verdict(r.requestId, r.approve, r.feedback)}`;
    }
    case "permissionRequest": {
      const p = kind.value;
      return `permission_request ${p.toolName}: ${indentRest(p.description)}${p.inputPreview ? `\n${indent(p.inputPreview)}` : ""}`;
    }
    case "permissionResponse": {
      const r = kind.value;
      return `permission_response ${verdict(r.requestId, r.allow, r.reason, ["allowed", "denied"])}`;
    }
    case "requestUpdate": {
      const u = kind.value;
      return `request_update ${u.requestId} (${requestKindName(u.kind)}) ${requestStatusName(u.status)}: ${u.detail}`;
    }
    default:
      return "(empty message)";
  }
}

/** A request's status as its parties say it: a handoff is accepted or declined, not approved. */
export function requestStatusWord(r: Pick<RequestRecord, "kind" | "status">): string {
  const word = requestStatusName(r.status);
  if (requestKindName(r.kind) !== "task_handoff") return word;
  return word === "approved" ? "accepted" : word === "rejected" ? "declined" : word;
}

/** A request record, one field per line. */
export function describeRequest(r: RequestRecord): string {
  const rows: [string, string][] = [
    ["request", r.requestId],
    ["kind", requestKindName(r.kind)],
    ["from", r.from],
    ["to", r.to],
    ["status", requestStatusWord(r)],
    ["created", instant(r.createdAt)],
    ["expires", instant(r.expiresAt)],
    ["resolved", instant(r.resolvedAt)],
    ["asked", describeMessage(r.request)],
    ["answer", r.response ? describeMessage(r.response) : "-"],
  ];
  return rows.map(([k, v]) => `${k.padEnd(9)}${v}`).join("\n");
}

/** One task, then its history of requests oldest first, one line each. */
export function describeTask(task: Task, history: RequestRecord[] = []): string {
  const ids = (list: string[]) => (list.length > 0 ? list.join(", ") : "-");
  const rows: [string, string][] = [
    ["task", task.taskId],
    ["subject", task.subject],
    ["status", `${taskProgressName(task.status)}${task.ready ? " (ready)" : ""}`],
    ["state", taskStateName(task.state)],
    ["owner", task.owner || "-"],
    ["waits on", ids(task.blockedBy)],
    ["open", ids(task.openBlockers)],
    ["blocks", ids(task.blocks)],
    ["created", `${instant(task.createdAt)}${task.createdBy ? ` by ${task.createdBy}` : ""}`],
    ["updated", instant(task.updatedAt)],
  ];
  if (task.activeForm) rows.splice(2, 0, ["doing", task.activeForm]);
  const lines = rows.map(([k, v]) => `${k.padEnd(10)}${v}`);
  if (task.description) lines.push("details", indent(task.description));
  if (history.length > 0) {
    lines.push("history");
    for (const r of history) {
      lines.push(
        `  ${instant(r.createdAt)}  ${requestKindName(r.kind)} ${r.from} → ${r.to}  ${requestStatusName(r.status)}  ${r.requestId}`,
      );
    }
  }
  return lines.join("\n");
}

// ": <note>" when there is one.
const note = (s: string) => (s ? `: ${indentRest(s)}` : "");

/** "<request_id> approved[: <words>]" / "<request_id> rejected: <why>". */
const verdict = (requestId: string, yes: boolean, why: string, words = ["approved", "rejected"]) =>
  `${requestId} ${yes ? `${words[0]}${note(why)}` : `${words[1]}: ${indentRest(why)}`}`;

const indent = (s: string) =>
  s
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");

/** The first line as is, later lines indented under it. */
const indentRest = (s: string) => s.split("\n").join("\n    ");
