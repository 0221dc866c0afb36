import type { MessageInitShape } from "@bufbuild/protobuf";
import { RequestKind } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { type TaskStatusName, taskStatusOf } from "./names.js";

/** A Message as a Send takes it: exactly one case of the oneof. */
export type MessageInit = MessageInitShape<typeof MessageSchema>;

/** What a worker reports about a task (as Claude Code's agent teams report one). */
export interface TaskReport {
  /** The task's identifier, as the worker knows it. */
  taskId: string;
  status: TaskStatusName;
  /** What the task was; the server's default summary quotes it. */
  description?: string;
  /** One line for the lead; blank: the server writes Claude Code's `Agent "…" completed`. */
  summary?: string;
  /** What the lead should read. */
  result?: string;
  /** What went wrong, for a failed task. */
  error?: string;
  usage?: {
    totalTokens?: number | bigint;
    toolUses?: number | bigint;
    durationMs?: number | bigint;
  };
}

// One builder per case, so callers never spell the oneof by hand.

export const textMessage = (value: string): MessageInit => ({ kind: { case: "text", value } });

export const shutdownRequestMessage = (reason = ""): MessageInit => ({
  kind: { case: "shutdownRequest", value: { reason } },
});

export const shutdownResponseMessage = (
  requestId: string,
  approve: boolean,
  reason = "",
): MessageInit => ({
  kind: { case: "shutdownResponse", value: { requestId, approve, reason } },
});

export const planRequestMessage = (plan: string): MessageInit => ({
  kind: { case: "planApprovalRequest", value: { plan } },
});

export const planResponseMessage = (
  requestId: string,
  approve: boolean,
  feedback = "",
): MessageInit => ({
  kind: { case: "planApprovalResponse", value: { requestId, approve, feedback } },
});

export function taskNotificationMessage(report: TaskReport): MessageInit {
  const usage = report.usage;
  return {
    kind: {
      case: "taskNotification",
      value: {
        taskId: report.taskId,
        status: taskStatusOf(report.status),
        description: report.description ?? "",
        summary: report.summary ?? "",
        result: report.result ?? "",
        error: report.error ?? "",
        ...(usage
          ? {
              usage: {
                totalTokens: BigInt(usage.totalTokens ?? 0),
                toolUses: BigInt(usage.toolUses ?? 0),
                durationMs: BigInt(usage.durationMs ?? 0),
              },
            }
          : {}),
      },
    },
  };
}

// The task protocols: a claim, the lead's direct assignment, a handoff and a result sign-off.

export const taskClaimRequestMessage = (taskId: string, note = ""): MessageInit => ({
  kind: { case: "taskClaimRequest", value: { taskId, note } },
});

export const taskClaimResponseMessage = (
  requestId: string,
  approve: boolean,
  reason = "",
): MessageInit => ({
  kind: { case: "taskClaimResponse", value: { requestId, approve, reason } },
});

export const taskAssignMessage = (taskId: string, note = ""): MessageInit => ({
  kind: { case: "taskAssign", value: { taskId, note } },
});

export const taskHandoffRequestMessage = (taskId: string, note: string): MessageInit => ({
  kind: { case: "taskHandoffRequest", value: { taskId, note } },
});

export const taskHandoffResponseMessage = (
  requestId: string,
  accept: boolean,
  reason = "",
): MessageInit => ({
  kind: { case: "taskHandoffResponse", value: { requestId, accept, reason } },
});

export const resultSignoffRequestMessage = (
  taskId: string,
  result: string,
  summary = "",
): MessageInit => ({
  kind: { case: "resultSignoffRequest", value: { taskId, result, summary } },
});

export const resultSignoffResponseMessage = (
  requestId: string,
  approve: boolean,
  feedback = "",
): MessageInit => ({
  kind: { case: "resultSignoffResponse", value: { requestId, approve, feedback } },
});

export const permissionRequestMessage = (prompt: {
  toolName: string;
  description: string;
  inputPreview: string;
  runtimeRequestId: string;
}): MessageInit => ({
  kind: { case: "permissionRequest", value: prompt },
});

export const permissionResponseMessage = (
  requestId: string,
  allow: boolean,
  reason = "",
): MessageInit => ({
  kind: { case: "permissionResponse", value: { requestId, allow, reason } },
});

/**
 * The answer to a request of `kind`, for surfaces that answer any request the same way (the
 * console's buttons, `team task answer`): `words` is the reason or the feedback, whichever
 * the kind's answer carries. undefined for a kind that takes no answer (task_assign).
 */
export function answerMessage(
  kind: RequestKind,
  requestId: string,
  approve: boolean,
  words = "",
): MessageInit | undefined {
  switch (kind) {
    case RequestKind.SHUTDOWN:
      return shutdownResponseMessage(requestId, approve, words);
    case RequestKind.PLAN_APPROVAL:
      return planResponseMessage(requestId, approve, words);
    case RequestKind.TASK_CLAIM:
      return taskClaimResponseMessage(requestId, approve, words);
    case RequestKind.TASK_HANDOFF:
      return taskHandoffResponseMessage(requestId, approve, words);
    case RequestKind.RESULT_SIGNOFF:
      return resultSignoffResponseMessage(requestId, approve, words);
    case RequestKind.PERMISSION:
      return permissionResponseMessage(requestId, approve, words);
    default:
      return undefined;
  }
}
