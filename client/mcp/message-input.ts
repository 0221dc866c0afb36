import {
  type MessageInit,
  permissionResponseMessage,
  planRequestMessage,
  planResponseMessage,
  resultSignoffRequestMessage,
  resultSignoffResponseMessage,
  shutdownRequestMessage,
  shutdownResponseMessage,
  taskAssignMessage,
  taskClaimRequestMessage,
  taskClaimResponseMessage,
  taskHandoffRequestMessage,
  taskHandoffResponseMessage,
  taskNotificationMessage,
  textMessage,
} from "@team-protocols/client/messages.js";
import { z } from "zod";

// The `message` of send_message, in the shape prompts written for Claude Code's SendMessage
// tool already use: a string, or an object whose `type` names the protocol message.

const requestId = z.string().min(1).describe("The request_id of the request being answered.");
const taskId = z.string().min(1).describe("The task's id, as the team names it.");

const structured = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("shutdown_request"),
    reason: z.string().optional().describe("Why the addressee should stop."),
  }),
  z.object({
    type: z.literal("shutdown_response"),
    request_id: requestId,
    approve: z.boolean().describe("true: you stop (your token is revoked); false: keep working."),
    reason: z.string().optional().describe("Required when approve is false: why you keep working."),
  }),
  z.object({
    type: z.literal("plan_approval_request"),
    plan: z.string().min(1).describe("The plan the lead should approve before you act on it."),
  }),
  z.object({
    type: z.literal("plan_approval_response"),
    request_id: requestId,
    approve: z.boolean().describe("true: the teammate may act (it inherits your permission mode)."),
    feedback: z.string().optional().describe("What to change (on reject) or to keep in mind."),
  }),
  z.object({
    type: z.literal("task_notification"),
    task_id: z.string().min(1).describe("The task's identifier."),
    status: z.enum(["completed", "failed", "stopped"]).describe("How the task ended."),
    description: z.string().optional().describe("What the task was."),
    summary: z.string().optional().describe("One line for the lead."),
    result: z.string().optional().describe("What the lead should read."),
    error: z.string().optional().describe("What went wrong, for a failed task."),
  }),
  z.object({
    type: z.literal("task_claim_request"),
    task_id: taskId,
    note: z.string().optional().describe("Why you, or how you will go about it."),
  }),
  z.object({
    type: z.literal("task_claim_response"),
    request_id: requestId,
    approve: z.boolean().describe("true: the claimant owns the task; false: it stays unowned."),
    reason: z.string().optional().describe("Required when approve is false."),
  }),
  z.object({
    type: z.literal("task_assign"),
    task_id: taskId,
    note: z.string().optional().describe("What you want done."),
  }),
  z.object({
    type: z.literal("task_handoff_request"),
    task_id: taskId,
    note: z.string().describe("Where the work stands, for the next owner."),
  }),
  z.object({
    type: z.literal("task_handoff_response"),
    request_id: requestId,
    accept: z.boolean().describe("true: you take the task over; false: its owner keeps it."),
    reason: z.string().optional().describe("Required when accept is false."),
  }),
  z.object({
    type: z.literal("result_signoff_request"),
    task_id: taskId,
    result: z.string().describe("The result, for the lead to check."),
    summary: z.string().optional().describe("One line for the lead."),
  }),
  z.object({
    type: z.literal("result_signoff_response"),
    request_id: requestId,
    approve: z.boolean().describe("true: the task is done; false: its owner keeps working on it."),
    feedback: z.string().optional().describe("What to change. Required when approve is false."),
  }),
  z.object({
    type: z.literal("permission_response"),
    request_id: requestId,
    allow: z.boolean().describe("true: the teammate's runtime may use the tool this once."),
    reason: z.string().optional().describe("Required when allow is false: why not."),
  }),
]);

export const messageInput = z
  .union([z.string().describe("Plain text."), structured])
  .describe(
    'Plain text, or an object with "type": shutdown_request {reason?}, shutdown_response ' +
      "{request_id, approve, reason?}, plan_approval_request {plan}, plan_approval_response " +
      "{request_id, approve, feedback?}, task_notification {task_id, status, description?, " +
      "summary?, result?, error?}, task_claim_request {task_id, note?}, task_claim_response " +
      "{request_id, approve, reason?}, task_assign {task_id, note?}, task_handoff_request " +
      "{task_id, note}, task_handoff_response {request_id, accept, reason?}, " +
      "result_signoff_request {task_id, result, summary?}, result_signoff_response " +
      "{request_id, approve, feedback?}, permission_response {request_id, allow, reason?}.",
  );

export type MessageInput = z.infer<typeof messageInput>;

/** Each type's fields as the description spells them: "request_id, approve, reason?". */
function fieldsOf(type: string): string {
  const option = structured.options.find((o) => o.shape.type.value === type);
  if (!option) return "";
  return Object.entries(option.shape)
    .filter(([k]) => k !== "type")
    .map(([k, v]) => `${k}${(v as z.ZodType).safeParse(undefined).success ? "?" : ""}`)
    .join(", ");
}

const types = () => structured.options.map((o) => o.shape.type.value);

/**
 * What is wrong with send_message's `message`, in one sentence a model can act on, or
 * undefined when nothing is. zod's own answer for a union lists every branch it tried; a
 * model needs the branch it meant (the `type` it wrote) and the fields that type takes. A
 * string that is a typed message in JSON is refused: sent as text, the model would believe
 * it had claimed a task or answered a request.
 */
export function messageProblem(raw: unknown): string | undefined {
  if (typeof raw === "string") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return undefined;
    }
    const type = (parsed as { type?: unknown } | null)?.type;
    if (typeof type === "string" && types().includes(type as never)) {
      return `invalid-input: message is a JSON string; pass the object (message: { "type": "${type}", ${fieldsOf(type)} }), not a string. Nothing was sent; fix the call.`;
    }
    return undefined;
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return raw === undefined
      ? undefined
      : "invalid-input: message must be plain text or an object with a type. Nothing was sent; fix the call.";
  }
  const type = (raw as { type?: unknown }).type;
  if (typeof type !== "string" || !types().includes(type as never)) {
    return `invalid-input: message.type ${type === undefined ? "is missing" : `${JSON.stringify(type)} is not a message type`}; use one of ${types().join(", ")}. Nothing was sent; fix the call.`;
  }
  const parsed = structured.safeParse(raw);
  if (parsed.success) return undefined;
  const problems = parsed.error.issues.map(
    (i) => `${["message", ...i.path].join(".")}: ${i.message}`,
  );
  return `invalid-input: message was read as ${type}, which takes {${fieldsOf(type)}}: ${problems.join("; ")}. Nothing was sent; fix the call.`;
}

/** The Message a Send takes. Validation of the protocol rules is the server's. */
export function toMessageInit(m: MessageInput): MessageInit {
  if (typeof m === "string") return textMessage(m);
  switch (m.type) {
    case "shutdown_request":
      return shutdownRequestMessage(m.reason ?? "");
    case "shutdown_response":
      return shutdownResponseMessage(m.request_id, m.approve, m.reason ?? "");
    case "plan_approval_request":
      return planRequestMessage(m.plan);
    case "plan_approval_response":
      return planResponseMessage(m.request_id, m.approve, m.feedback ?? "");
    case "task_notification":
      return taskNotificationMessage({
        taskId: m.task_id,
        status: m.status,
        description: m.description ?? "",
        summary: m.summary ?? "",
        result: m.result ?? "",
        error: m.error ?? "",
      });
    case "task_claim_request":
      return taskClaimRequestMessage(m.task_id, m.note ?? "");
    case "task_claim_response":
      return taskClaimResponseMessage(m.request_id, m.approve, m.reason ?? "");
    case "task_assign":
      return taskAssignMessage(m.task_id, m.note ?? "");
    case "task_handoff_request":
      return taskHandoffRequestMessage(m.task_id, m.note);
    case "task_handoff_response":
      return taskHandoffResponseMessage(m.request_id, m.accept, m.reason ?? "");
    case "result_signoff_request":
      return resultSignoffRequestMessage(m.task_id, m.result, m.summary ?? "");
    case "result_signoff_response":
      return resultSignoffResponseMessage(m.request_id, m.approve, m.feedback ?? "");
    case "permission_response":
      return permissionResponseMessage(m.request_id, m.allow, m.reason ?? "");
  }
}
