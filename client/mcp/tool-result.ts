import { Code } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { TeamError } from "@team-protocols/client/team-error.js";

/**
 * A successful tool result, one style for every tool: the readable text, and the same text
 * first in `structuredContent` with the data beside it (snake_case keys, enum words: see
 * plain.ts). Claude Code hands a model the structuredContent when there is one and drops the
 * text blocks, so whatever the text says must be in it: a model given only the structured
 * result still reads each message, its answer lines and every hint the text gives.
 */
export function ok(text: string, data: Record<string, unknown> = {}): CallToolResult {
  return {
    content: [{ type: "text", text }],
    structuredContent: { text, ...data },
  };
}

/**
 * A refusal as the model sees it: a tool result with isError, never a protocol error, whose
 * text starts with the rule id and carries the server's sentence on how to correct the call.
 */
export function refusal(err: unknown): CallToolResult {
  const e = TeamError.fromError(err);
  const v = e.violation;
  let text: string;
  if (v) {
    text = `${v.rule}: ${v.sentence}${v.field ? ` (field: ${v.field})` : ""}`;
  } else if (e.code === Code.Unauthenticated) {
    // A stopped member's token is revoked: say so plainly, nothing the model can retry.
    text = `unauthenticated: ${e.rawMessage}. This member's token no longer works; stop calling team tools.`;
  } else {
    text = `${e.codeName}: ${e.rawMessage}`;
  }
  return { content: [{ type: "text", text }], isError: true };
}

/** Runs a tool body; every error becomes an isError result. */
export async function guarded(body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    return refusal(err);
  }
}
