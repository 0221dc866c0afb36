import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Identity } from "@team-protocols/client/identity.js";
import { permissionRequestMessage } from "@team-protocols/client/messages.js";
import { requestStatusName } from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import { CHANNEL_METHOD } from "./channel-push.js";
import { type PermissionLead, relayPermissionPrompts } from "./permission-relay.js";

/** The capabilities a bridge that relays permission prompts declares (with the channel's). */
export const PERMISSION_CAPABILITIES = {
  "claude/channel": {},
  "claude/channel/permission": {},
} as const;

/** Whether this member's runtime prompts go to a lead: a teammate's do; the lead is the lead. */
export const relaysPermissions = (me: Identity): boolean => me.role === "teammate";

/** How long one AwaitRequest waits before it is asked again (the request's own TTL ends it). */
const AWAIT_SLICE_MS = 30_000;

/**
 * The team's side of the relay, over the member's client: a permission_request to the lead
 * (a request the server tracks, with its deadline, PERMISSION_TTL_MS), then AwaitRequest
 * until it left pending.
 */
export function leadOverTeam(client: TeamClient): PermissionLead {
  return {
    async ask(prompt) {
      const sent = await client.send(
        await client.leadName(),
        permissionRequestMessage({
          toolName: prompt.tool_name,
          description: prompt.description,
          inputPreview: prompt.input_preview,
          runtimeRequestId: prompt.request_id,
        }),
      );
      return sent.requestId;
    },
    async outcome(requestId, signal) {
      for (;;) {
        const r = await client.awaitRequest(requestId, { timeoutMs: AWAIT_SLICE_MS });
        if (r.status !== RequestStatus.PENDING) {
          const answer = r.response?.kind;
          if (answer?.case === "permissionResponse") {
            return { answered: true, allow: answer.value.allow, reason: answer.value.reason };
          }
          const how = r.answeredBy && r.answeredBy !== r.to ? ` by ${r.answeredBy}` : "";
          return { answered: false, status: requestStatusName(r.status), detail: how };
        }
        if (signal.aborted) throw signal.reason;
      }
    },
  };
}

/**
 * Wires Claude Code's permission prompts of this session to the team's lead: each prompt
 * becomes a permission_request, and the lead's answer (or an approver's for it) goes back
 * as Claude Code's verdict. Call before the MCP server connects. Returns a stop.
 */
export function relayPermissionsToLead(o: {
  server: Server;
  client: TeamClient;
  onError(err: unknown): void;
}): () => void {
  return relayPermissionPrompts({
    server: o.server,
    lead: leadOverTeam(o.client),
    tell: (content) =>
      o.server.notification({
        method: CHANNEL_METHOD,
        params: { content, meta: { kind: "permission_relay" } },
      }),
    onError: o.onError,
  });
}
