import { TaskProgress } from "@team-protocols/contract/team/v1/enums_pb.js";
import {
  MAX_DEPENDENCIES_PER_CALL,
  MAX_NOTE_BYTES,
  MAX_TASK_LINE_CHARS,
} from "../../domain/limits.js";
import { nameViolation, taskIdViolation } from "./names.js";
import type { AnyRequest, Violation } from "./rule.js";

// size-shape for the task list's calls: subjects, descriptions, active forms, dependency
// lists, and which fields go together.

/** A subject or an active form: one line of at most MAX_TASK_LINE_CHARS characters. */
function lineViolation(value: string, field: string, required: boolean): Violation | undefined {
  if (required && value.trim() === "") return { sentence: `${field} is required`, field };
  if ([...value.trim()].length > MAX_TASK_LINE_CHARS) {
    return { sentence: `${field} is longer than ${MAX_TASK_LINE_CHARS} characters`, field };
  }
  if (/\p{Cc}/u.test(value.trim())) {
    return {
      sentence: `${field} is one line: it contains line breaks or control characters`,
      field,
    };
  }
  return undefined;
}

function descriptionViolation(value: string, field: string): Violation | undefined {
  if (Buffer.byteLength(value) > MAX_NOTE_BYTES) {
    return { sentence: `${field} is larger than ${MAX_NOTE_BYTES} bytes`, field };
  }
  // PostgreSQL text cannot hold U+0000.
  return value.includes("\u0000") ? { sentence: `${field} contains NUL`, field } : undefined;
}

/** Dependency lists: task ids, at most MAX_DEPENDENCIES_PER_CALL in all. */
function idListsViolation(request: AnyRequest, fields: string[]): Violation | undefined {
  let count = 0;
  for (const field of fields) {
    const ids: string[] = request[camel(field)];
    count += ids.length;
    for (const id of ids) {
      const v = taskIdViolation(id, field);
      if (v) return v;
    }
  }
  if (count > MAX_DEPENDENCIES_PER_CALL) {
    return {
      sentence: `${fields.join(", ")} name ${count} tasks; at most ${MAX_DEPENDENCIES_PER_CALL} in one call`,
      field: fields[0] as string,
    };
  }
  return undefined;
}

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

export function createTaskShape(r: AnyRequest): Violation | undefined {
  return (
    (r.taskId === "" ? undefined : taskIdViolation(r.taskId, "task_id")) ??
    lineViolation(r.subject, "subject", true) ??
    descriptionViolation(r.description, "description") ??
    lineViolation(r.activeForm, "active_form", false) ??
    idListsViolation(r, ["blocked_by"])
  );
}

const DEPENDENCY_FIELDS = ["add_blocked_by", "remove_blocked_by", "add_blocks", "remove_blocks"];

export function updateTaskShape(r: AnyRequest): Violation | undefined {
  const v =
    taskIdViolation(r.taskId, "task_id") ??
    (r.subject === undefined ? undefined : lineViolation(r.subject, "subject", true)) ??
    (r.description === undefined
      ? undefined
      : descriptionViolation(r.description, "description")) ??
    (r.activeForm === undefined ? undefined : lineViolation(r.activeForm, "active_form", false)) ??
    idListsViolation(r, DEPENDENCY_FIELDS);
  if (v) return v;
  const fields =
    (r.subject !== undefined ? 1 : 0) +
    (r.description !== undefined ? 1 : 0) +
    (r.activeForm !== undefined ? 1 : 0) +
    DEPENDENCY_FIELDS.filter((f) => r[camel(f)].length > 0).length;
  if (fields === 0 && r.status === TaskProgress.UNSPECIFIED) {
    return {
      sentence:
        "nothing to change: set subject, description, active_form, a dependency list or status",
    };
  }
  if (r.status === TaskProgress.DELETED && fields > 0) {
    return {
      sentence: "status deleted deletes the task: send it without other changes",
      field: "status",
    };
  }
  return undefined;
}

export function listTasksShape(r: AnyRequest): Violation | undefined {
  if (r.owner !== "") {
    const v = nameViolation(r.owner, "owner", "owner");
    if (v) return v;
  }
  if (r.ready && r.blocked) {
    return {
      sentence: "a task is ready or blocked, never both: ask for one of them",
      field: "blocked",
    };
  }
  return undefined;
}
