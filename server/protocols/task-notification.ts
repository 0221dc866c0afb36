import { create } from "@bufbuild/protobuf";
import { TaskStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import {
  type Message,
  MessageSchema,
  type TaskNotificationBody,
} from "@team-protocols/contract/team/v1/message_pb.js";
import type { SendPlan } from "./protocol.js";

/**
 * Task notification: a worker tells the lead how a task ended. No request, no answer.
 *
 * - Who: any member, to the lead (task-to-lead), never "*" (no-broadcast).
 * - What: task id, status (completed / failed / stopped: required), description, result,
 *   error, usage. A blank summary is written by the server, as Claude Code's agent teams do:
 *   `Agent "<description>" completed`, `Agent "<description>" failed: <error>` (or
 *   "Unknown error"), `Agent "<description>" was stopped`.
 */
export function defaultSummary(
  n: Pick<TaskNotificationBody, "status" | "description" | "error">,
): string {
  const agent = `Agent "${n.description}"`;
  switch (n.status) {
    case TaskStatus.COMPLETED:
      return `${agent} completed`;
    case TaskStatus.FAILED:
      return `${agent} failed: ${n.error.trim() || "Unknown error"}`;
    default:
      return `${agent} was stopped`;
  }
}

export function planTaskNotification(message: Message): SendPlan {
  // A guard that narrows the type: the switch in index.ts hands each plan its own kind only,
  // so no caller reaches the throw (an equivalent mutant when the condition is mutated).
  // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement,StringLiteral
  if (message.kind.case !== "taskNotification") throw new Error("not a task_notification");
  const n = message.kind.value;
  return {
    message: create(MessageSchema, {
      kind: {
        case: "taskNotification",
        value: { ...n, summary: n.summary.trim() || defaultSummary(n) },
      },
    }),
  };
}
