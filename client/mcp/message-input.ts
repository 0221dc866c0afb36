import { z } from "zod";
import {
  type MessageInit,
  planRequestMessage,
  planResponseMessage,
  shutdownRequestMessage,
  shutdownResponseMessage,
  taskNotificationMessage,
  textMessage,
} from "../messages.js";

// The `message` of send_message, in the shape prompts written for Claude Code's SendMessage
// tool already use: a string, or an object whose `type` names the protocol message.

const requestId = z.string().min(1).describe("The request_id of the request being answered.");

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
]);

export const messageInput = z
  .union([z.string().describe("Plain text."), structured])
  .describe(
    'Plain text, or an object with "type": shutdown_request {reason?}, shutdown_response ' +
      "{request_id, approve, reason?}, plan_approval_request {plan}, plan_approval_response " +
      "{request_id, approve, feedback?}, task_notification {task_id, status, description?, " +
      "summary?, result?, error?}.",
  );

export type MessageInput = z.infer<typeof messageInput>;

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
  }
}
