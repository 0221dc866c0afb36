import {
  MAX_NOTE_BYTES,
  MAX_PLAN_BYTES,
  MAX_RESULT_BYTES,
  MAX_TEXT_BYTES,
} from "../../domain/limits.js";
import { requestIdViolation, taskIdViolation } from "./names.js";
import type { AnyRequest, Violation } from "./rule.js";

// Buffer.byteLength counts UTF-8 unless told otherwise.
const utf8Bytes = (s: string) => Buffer.byteLength(s);

function over(field: string, value: string, max: number): Violation | undefined {
  return utf8Bytes(value) > max
    ? { sentence: `${field} is larger than ${max} bytes`, field }
    : undefined;
}

const answered = (field: string, value: string) =>
  requestIdViolation(
    value,
    field,
    `${field} is required: the request_id of the request you answer`,
  );

/** The shape and sizes of the one case a Send's message carries. */
export function messageShapeViolation(c: {
  case: string;
  value: AnyRequest;
}): Violation | undefined {
  const v = c.value;
  switch (c.case) {
    case "text": {
      const text = c.value as unknown as string;
      if (text.trim() === "") return { sentence: "text is empty", field: "message.text" };
      return over("message.text", text, MAX_TEXT_BYTES);
    }
    case "shutdownRequest":
      return over("message.shutdown_request.reason", v.reason, MAX_NOTE_BYTES);
    case "shutdownResponse":
      return (
        answered("message.shutdown_response.request_id", v.requestId) ??
        over("message.shutdown_response.reason", v.reason, MAX_NOTE_BYTES)
      );
    case "planApprovalRequest":
      if (v.plan.trim() === "") {
        return { sentence: "plan is empty", field: "message.plan_approval_request.plan" };
      }
      return over("message.plan_approval_request.plan", v.plan, MAX_PLAN_BYTES);
    case "planApprovalResponse":
      return (
        answered("message.plan_approval_response.request_id", v.requestId) ??
        over("message.plan_approval_response.feedback", v.feedback, MAX_NOTE_BYTES)
      );
    case "taskNotification":
      return taskNotificationShape(v);
    case "taskClaimRequest":
    case "taskAssign":
    case "taskHandoffRequest": {
      const field = `message.${snake(c.case)}`;
      return (
        taskIdViolation(v.taskId, `${field}.task_id`) ??
        over(`${field}.note`, v.note, MAX_NOTE_BYTES)
      );
    }
    case "resultSignoffRequest":
      return resultShape(v);
    case "taskClaimResponse":
    case "taskHandoffResponse": {
      const field = `message.${snake(c.case)}`;
      return (
        answered(`${field}.request_id`, v.requestId) ??
        over(`${field}.reason`, v.reason, MAX_NOTE_BYTES)
      );
    }
    case "permissionRequest":
      return permissionShape(v);
    case "permissionResponse":
      return (
        answered("message.permission_response.request_id", v.requestId) ??
        over("message.permission_response.reason", v.reason, MAX_NOTE_BYTES)
      );
    case "resultSignoffResponse":
      return (
        answered("message.result_signoff_response.request_id", v.requestId) ??
        over("message.result_signoff_response.feedback", v.feedback, MAX_NOTE_BYTES)
      );
  }
  return undefined;
}

const snake = (name: string) => name.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`);

function resultShape(v: AnyRequest): Violation | undefined {
  const field = "message.result_signoff_request";
  if (v.result.trim() === "") {
    return {
      sentence: "result is empty: give the lead something to sign off",
      field: `${field}.result`,
    };
  }
  return (
    taskIdViolation(v.taskId, `${field}.task_id`) ??
    over(`${field}.result`, v.result, MAX_RESULT_BYTES) ??
    over(`${field}.summary`, v.summary, MAX_NOTE_BYTES)
  );
}

/** A relayed permission prompt: the runtime's words, bounded; its own id short and printable. */
function permissionShape(v: AnyRequest): Violation | undefined {
  const field = "message.permission_request";
  if (v.toolName.trim() === "") {
    return {
      sentence: "tool_name is required: the tool the runtime asks for",
      field: `${field}.tool_name`,
    };
  }
  const id = [...v.runtimeRequestId].length;
  if (id < 1 || id > 64 || /\p{Cc}/u.test(v.runtimeRequestId)) {
    return {
      sentence:
        "runtime_request_id is required: the runtime's own id of the prompt, 1 to 64 printable characters",
      field: `${field}.runtime_request_id`,
    };
  }
  return (
    over(`${field}.tool_name`, v.toolName, 256) ??
    over(`${field}.description`, v.description, MAX_NOTE_BYTES) ??
    over(`${field}.input_preview`, v.inputPreview, MAX_NOTE_BYTES)
  );
}

function taskNotificationShape(v: AnyRequest): Violation | undefined {
  const field = "message.task_notification";
  if (v.status === 0) {
    return {
      sentence: "status is required: completed, failed or stopped",
      field: `${field}.status`,
    };
  }
  if (v.status === 4) {
    return {
      sentence: "status ready is written by the server only: report completed, failed or stopped",
      field: `${field}.status`,
    };
  }
  if (![1, 2, 3].includes(v.status)) {
    return { sentence: `status ${v.status} is not a known task status`, field: `${field}.status` };
  }
  return (
    over(`${field}.task_id`, v.taskId, 256) ??
    over(`${field}.description`, v.description, MAX_NOTE_BYTES) ??
    over(`${field}.summary`, v.summary, MAX_NOTE_BYTES) ??
    over(`${field}.error`, v.error, MAX_NOTE_BYTES) ??
    over(`${field}.result`, v.result, MAX_RESULT_BYTES)
  );
}
