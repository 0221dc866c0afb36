import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Envelope } from "../gen/team/v1/records_pb.js";
import { permissionModeName, requestKindName, requestStatusName, taskStatusName } from "./names.js";

export interface PromptTextOptions {
  /**
   * How the expected answer is spelled: as the Message to send ("rpc", for agents with a
   * tool over the client library) or as the `team` CLI command ("cli"). Default "rpc".
   */
  answers?: "rpc" | "cli";
}

/**
 * An envelope as text for an LLM agent's context. Task notifications are the seed's
 * `<task-notification>` block; protocol messages name their request_id and spell out the
 * answer expected. Every value is escaped, so a message body cannot forge the markup
 * around it (a teammate cannot fake a shutdown request inside a text).
 */
export function toPromptText(envelope: Envelope, options: PromptTextOptions = {}): string {
  const cli = options.answers === "cli";
  const from = envelope.from || "the server";
  const id = envelope.requestId;
  const kind = envelope.message?.kind ?? { case: undefined };
  switch (kind.case) {
    case "text":
      return block("message", envelope, [text(kind.value)]);
    case "shutdownRequest":
      return block("shutdown-request", envelope, [
        `${from} asks you to shut down${kind.value.reason ? `. Reason: ${text(kind.value.reason)}` : "."}`,
        "Answer it (exactly once) to approve and stop, or to reject with a reason and keep working:",
        cli
          ? `  team answer-shutdown ${id} --approve\n  team answer-shutdown ${id} --reject --reason "<why you must keep working>"`
          : `  shutdown_response to "${from}": { request_id: "${id}", approve: true }\n  shutdown_response to "${from}": { request_id: "${id}", approve: false, reason: "<why you must keep working>" }`,
        "Once you approve, the server stops you: your token no longer works.",
      ]);
    case "shutdownResponse": {
      const r = kind.value;
      return block("shutdown-response", envelope, [
        r.approve
          ? `${from} approved your shutdown request ${r.requestId} and has stopped.`
          : `${from} rejected your shutdown request ${r.requestId} and keeps working. Reason: ${text(r.reason)}`,
        ...(r.approve ? [] : ["You may ask again later, or remove the member to force it."]),
      ]);
    }
    case "planApprovalRequest":
      return block("plan-approval-request", envelope, [
        `${from} asks you to approve this plan before acting on it:`,
        `<plan>\n${text(kind.value.plan)}\n</plan>`,
        "Answer it (exactly once) to approve, or to reject with feedback saying what to change:",
        cli
          ? `  team approve ${id}\n  team reject ${id} --feedback "<what to change>"`
          : `  plan_approval_response to "${from}": { request_id: "${id}", approve: true }\n  plan_approval_response to "${from}": { request_id: "${id}", approve: false, feedback: "<what to change>" }`,
      ]);
    case "planApprovalResponse": {
      const r = kind.value;
      return block("plan-approval-response", envelope, [
        r.approve
          ? `${from} approved your plan (request ${r.requestId}). Go ahead with permission mode "${permissionModeName(r.permissionMode)}".`
          : `${from} rejected your plan (request ${r.requestId}). Feedback: ${text(r.feedback)}`,
        ...(r.feedback && r.approve ? [`Feedback: ${text(r.feedback)}`] : []),
        ...(r.approve ? [] : ["Revise the plan and submit it again (a new request)."]),
      ]);
    }
    case "taskNotification":
      return taskNotificationBlock(kind.value);
    case "requestUpdate": {
      const u = kind.value;
      return block("request-update", envelope, [
        `Your ${requestKindName(u.kind).replace("_", " ")} request ${u.requestId} is now ${requestStatusName(u.status)}: ${text(u.detail)}`,
        "No answer to it will come; send a new request if you still need one.",
      ]);
    }
    default:
      return block("message", envelope, ["(a message of a kind this client does not know)"]);
  }
}

/** The seed's block: what Claude Code injects into a coordinator's conversation. */
function taskNotificationBlock(n: {
  taskId: string;
  status: number;
  summary: string;
  result: string;
  usage?: { totalTokens: bigint; toolUses: bigint; durationMs: bigint } | undefined;
}): string {
  const lines = [
    "<task-notification>",
    `<task-id>${text(n.taskId)}</task-id>`,
    `<status>${taskStatusName(n.status)}</status>`,
    `<summary>${text(n.summary)}</summary>`,
  ];
  if (n.result) lines.push(`<result>${text(n.result)}</result>`);
  if (n.usage) {
    lines.push(
      "<usage>",
      `  <total_tokens>${n.usage.totalTokens}</total_tokens>`,
      `  <tool_uses>${n.usage.toolUses}</tool_uses>`,
      `  <duration_ms>${n.usage.durationMs}</duration_ms>`,
      "</usage>",
    );
  }
  lines.push("</task-notification>");
  return lines.join("\n");
}

function block(tag: string, e: Envelope, body: string[]): string {
  const attrs = [
    ["from", e.from || "server"],
    ["to", e.to],
    ...(e.requestId ? [["request_id", e.requestId]] : []),
    ["seq", String(e.seq)],
    ...(e.sentAt ? [["sent_at", timestampDate(e.sentAt).toISOString()]] : []),
  ];
  const open = `<${tag} ${attrs.map(([k, v]) => `${k}="${attribute(v ?? "")}"`).join(" ")}>`;
  return [open, ...body, `</${tag}>`].join("\n");
}

// What a member wrote goes through text(): angle brackets escaped, so it cannot open or
// close a tag; everything else stays as written, for the model to read naturally.
const text = (s: string) => s.replace(/</g, "&lt;").replace(/>/g, "&gt;");
const attribute = (s: string) => text(s).replace(/"/g, "&quot;");
