import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { z } from "zod";

/**
 * Claude Code's permission relay (its "Channels reference"): a channel server that declares
 * `claude/channel/permission` is sent each permission prompt of the session, and may answer
 * it with a verdict. The bridge asks the team's lead (a `permission_request`), waits for
 * the answer, and gives Claude Code the lead's allow or deny. Whichever answer comes first,
 * the lead's or the terminal's, is the one Claude Code applies.
 */

export const PERMISSION_REQUEST_METHOD = "notifications/claude/channel/permission_request";
export const PERMISSION_VERDICT_METHOD = "notifications/claude/channel/permission";

const permissionRequest = z.object({
  method: z.literal(PERMISSION_REQUEST_METHOD),
  params: z.looseObject({
    /** Claude Code's own short id of the prompt (five letters). */
    request_id: z.string(),
    tool_name: z.string(),
    description: z.string(),
    input_preview: z.string(),
  }),
});

export type RuntimePrompt = z.infer<typeof permissionRequest>["params"];

/** How the lead's request ended. */
export type LeadVerdict =
  | { answered: true; allow: boolean; reason: string }
  | { answered: false; status: string; detail: string };

/** The team's side of a prompt: the request to the lead, and its outcome. */
export interface PermissionLead {
  /** Sends the lead a permission_request; resolves to its request id. */
  ask(prompt: RuntimePrompt): Promise<string>;
  /** Resolves once the request left pending (answered, expired or canceled). */
  outcome(requestId: string, signal: AbortSignal): Promise<LeadVerdict>;
}

export interface PermissionRelayOptions {
  server: Server;
  lead: PermissionLead;
  /** Tells the teammate's model something (a channel event) when the lead gave no answer. */
  tell(text: string): Promise<void>;
  onError(err: unknown): void;
}

/** Listens for Claude Code's prompts; returns a stop that abandons the waits in flight. */
export function relayPermissionPrompts(o: PermissionRelayOptions): () => void {
  const stop = new AbortController();
  o.server.setNotificationHandler(permissionRequest, (notification) => {
    void relayOne(o, notification.params, stop.signal).catch((err: unknown) => {
      if (!stop.signal.aborted) o.onError(err);
    });
  });
  return () => stop.abort();
}

async function relayOne(
  o: PermissionRelayOptions,
  prompt: RuntimePrompt,
  signal: AbortSignal,
): Promise<void> {
  const requestId = await o.lead.ask(prompt);
  const verdict = await o.lead.outcome(requestId, signal);
  if (verdict.answered) {
    await o.server.notification({
      method: PERMISSION_VERDICT_METHOD,
      params: { request_id: prompt.request_id, behavior: verdict.allow ? "allow" : "deny" },
    });
    return;
  }
  await o.tell(
    `Your permission prompt ${prompt.request_id} (${prompt.tool_name}) was sent to the lead as ${requestId} ` +
      `and got no answer: the request is ${verdict.status}${verdict.detail ? ` (${verdict.detail})` : ""}. ` +
      "The prompt is still open in the terminal; ask again later or do without the tool.",
  );
}
