import { Code } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { TeamError } from "@team-protocols/client/team-error.js";

/** A successful tool result: text for the model, the same data structured for programs. */
export function ok(text: string, structured?: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: "text", text }],
    ...(structured ? { structuredContent: structured } : {}),
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
