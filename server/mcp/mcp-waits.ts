/** What a /mcp message asks of wait_for_messages: how many calls, and each request's id. */
export interface WaitCount {
  count: number;
  /** The message was a JSON-RPC batch (an array). */
  batch: boolean;
  /** Every request of the message (a notification has no id and gets no answer). */
  ids: { id: string | number; isWait: boolean }[];
}

const WAIT_TOOL = "wait_for_messages";

/**
 * Counts the wait_for_messages tool calls in a parsed JSON-RPC message (one request, or a
 * batch). Anything that is not such a call counts nothing: the MCP transport judges it.
 */
export function waitCount(message: unknown): WaitCount {
  const batch = Array.isArray(message);
  const items: unknown[] = batch ? message : [message];
  const ids: WaitCount["ids"] = [];
  let count = 0;
  for (const item of items) {
    if (typeof item !== "object" || item === null) continue;
    const { id, method, params } = item as { id?: unknown; method?: unknown; params?: unknown };
    const isWait =
      method === "tools/call" &&
      typeof params === "object" &&
      params !== null &&
      (params as { name?: unknown }).name === WAIT_TOOL;
    if (isWait) count++;
    if (typeof id === "string" || typeof id === "number") ids.push({ id, isWait });
  }
  return { count, batch, ids };
}
