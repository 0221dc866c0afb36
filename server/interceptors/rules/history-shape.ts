import { BROADCAST } from "../../domain/names.js";
import { nameViolation } from "./names.js";
import type { AnyRequest, Violation } from "./rule.js";

/**
 * size-shape for threads and search (docs/history.md). Ids are opaque to the caller but
 * never longer than an id the server hands out; nothing PostgreSQL text cannot hold
 * (U+0000) reaches a query. A search query is bounded in bytes: websearch_to_tsquery on a
 * query of many thousands of words runs out of stack ("stack depth limit exceeded").
 */
export const MAX_THREAD_ID_CHARS = 128;
export const MAX_SEARCH_QUERY_BYTES = 1024;
const MAX_KIND_CHARS = 64;

/** An envelope or thread id: at most 128 characters, no control characters. */
function idViolation(value: string, field: string): Violation | undefined {
  if ([...value].length > MAX_THREAD_ID_CHARS || /\p{Cc}/u.test(value)) {
    return {
      sentence: `${field} is longer than ${MAX_THREAD_ID_CHARS} characters or holds a control character`,
      field,
    };
  }
  return undefined;
}

/** Send's reply_to, when set. */
export const replyToViolation = (replyTo: string): Violation | undefined =>
  // Stryker disable next-line ConditionalExpression,StringLiteral: an empty reply_to passes idViolation too (no character, none a control character): the test only spares the call
  replyTo === "" ? undefined : idViolation(replyTo, "reply_to");

export function getThreadShape(request: AnyRequest): Violation | undefined {
  if (request.threadId === "") {
    return { sentence: "thread_id is required (an Envelope's thread_id)", field: "thread_id" };
  }
  return idViolation(request.threadId, "thread_id");
}

export function searchMessagesShape(request: AnyRequest): Violation | undefined {
  const query: string = request.query;
  if (query.trim() === "") {
    return { sentence: 'query is required: words to find, e.g. "parser bug"', field: "query" };
  }
  if (Buffer.byteLength(query) > MAX_SEARCH_QUERY_BYTES) {
    return {
      sentence: `query is longer than ${MAX_SEARCH_QUERY_BYTES} bytes`,
      field: "query",
    };
  }
  if (query.includes("\0")) return { sentence: "query holds U+0000", field: "query" };
  if (request.from !== "") {
    const v = nameViolation(request.from, "from", "from");
    if (v) return v;
  }
  if (request.to !== "" && request.to !== BROADCAST) {
    const v = nameViolation(request.to, "to", "to");
    if (v) return v;
  }
  const kind: string = request.kind;
  if ([...kind].length > MAX_KIND_CHARS || /\p{Cc}/u.test(kind)) {
    return {
      sentence: `kind is longer than ${MAX_KIND_CHARS} characters or holds a control character`,
      field: "kind",
    };
  }
  return undefined;
}
