import { NAME_PATTERN } from "../../domain/limits.js";
import type { Violation } from "./rule.js";

/** Team and member names: what NAME_PATTERN allows, with a sentence that says so. */
export function nameViolation(value: string, field: string, what: string): Violation | undefined {
  if (NAME_PATTERN.test(value)) return undefined;
  return {
    sentence:
      value === ""
        ? `${what} is required`
        : `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid name: use 1 to 64 ` +
          "characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit",
    field,
  };
}

const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;

/** A request id as the server mints them (req_ + 22 base64url characters). */
export function requestIdViolation(
  value: string,
  field: string,
  whenEmpty = `${field} is required`,
): Violation | undefined {
  if (REQUEST_ID.test(value)) return undefined;
  return {
    sentence:
      value === ""
        ? whenEmpty
        : `${field} ${JSON.stringify(value.slice(0, 64))} is not a request id`,
    field,
  };
}

/** The most characters a task id may have (the contract: 1 to 128, no control characters). */
export const MAX_TASK_ID_CHARS = 128;

/** A task id as the team names it: 1 to 128 characters, none of them a control character. */
export function taskIdViolation(value: string, field: string): Violation | undefined {
  if (value.trim() === "") return { sentence: `${field} is required: the task's id`, field };
  if ([...value].length > MAX_TASK_ID_CHARS) {
    return { sentence: `${field} is longer than ${MAX_TASK_ID_CHARS} characters`, field };
  }
  // PostgreSQL text cannot hold U+0000; other control characters are no better as keys.
  if (/\p{Cc}/u.test(value)) return { sentence: `${field} contains control characters`, field };
  return undefined;
}
