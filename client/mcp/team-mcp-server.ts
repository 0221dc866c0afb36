import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Identity } from "@team-protocols/client/identity.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { PushMode } from "./channel-push.js";
import { PERMISSION_CAPABILITIES, relaysPermissions } from "./permission-lead.js";
import { registerTeamPrompts } from "./prompts.js";
import { ToolRegistry } from "./tool-registry.js";
import { registerTeamTools, type ToolContext } from "./tools.js";
import type { InboxCursor } from "./wait-for-messages.js";

export interface TeamMcpOptions {
  client: TeamClient;
  me: Identity;
  cursor: InboxCursor;
  configFor: ToolContext["configFor"];
  /** Messages pushed as Claude Code channel events (stdio bridge only); unset: none. */
  push?: PushMode | undefined;
  /** Declares Claude Code's permission relay (a teammate's only: permission-lead.ts). */
  permissionRelay?: boolean | undefined;
}

/** One member's MCP server: the team's tools and prompts over its client. */
export function createTeamMcpServer(o: TeamMcpOptions): McpServer {
  const pushing = o.push !== undefined && o.me.role !== "observer";
  // The relay is part of the channel: Claude Code sends prompts only to a channel server.
  const relaying = pushing && o.permissionRelay === true && relaysPermissions(o.me);
  const server = new McpServer(
    { name: "team-protocols", version: "0.1.0" },
    {
      // Claude Code registers a listener for channel events only from servers declaring this.
      // Its permission prompts come only to servers declaring claude/channel/permission too.
      ...(pushing
        ? {
            capabilities: {
              experimental: {
                "claude/channel": {},
                ...(relaying ? PERMISSION_CAPABILITIES : {}),
              },
            },
          }
        : {}),
      instructions:
        (o.me.role === "observer"
          ? `You are "${o.me.name}", an observer of a team whose protocols a server enforces: ` +
            "you may read (list_members, list_requests, get_request, await_request, journal) " +
            "and nothing else; you receive no messages."
          : `You are "${o.me.name}" (${o.me.role}) in a team whose protocols a server enforces. ` +
            "Call wait_for_messages to receive messages; answer protocol messages with send_message " +
            "exactly as each message says. A refused call starts with the rule id and how to fix it.") +
        (pushing ? CHANNEL_INSTRUCTIONS : ""),
    },
  );
  const tools = new ToolRegistry();
  registerTeamTools(tools, {
    client: o.client,
    me: o.me,
    cursor: o.cursor,
    configFor: o.configFor,
  });
  tools.serve(server);
  registerTeamPrompts(server, o.client, o.me);
  return server;
}

/** What the model is told of channel events, when the bridge pushes them. */
const CHANNEL_INSTRUCTIONS =
  ' Messages from your team also arrive by themselves as <channel source="team" from=… seq=… kind=… request_id=…> events: ' +
  "each holds one message exactly as wait_for_messages would return it. A kind ending in _request " +
  "(shutdown_request, plan_approval_request, task_claim_request, task_handoff_request, " +
  "result_signoff_request, permission_request) asks you for an answer: answer it once with send_message exactly as the " +
  "event spells it, using its request_id. A kind ending in _response is the answer to your own " +
  "request: act on it (a rejected plan: revise and submit again; an approved one: go ahead). " +
  "request_update tells you a request expired or was canceled: do not answer it. permission_relay " +
  "tells you one of your own permission prompts went to the lead; its verdict reaches your runtime by itself. text is a message " +
  "to read; task_notification is a teammate's report. An event that says a request is no longer " +
  "pending needs no answer. You may see a message twice (after a restart): answer each request_id once.";

/** What a member pastes into a generic MCP client for the server's own /mcp endpoint. */
export function httpConfig(mcpUrl: string, token: string): unknown {
  return {
    mcpServers: {
      team: { type: "http", url: mcpUrl, headers: { Authorization: `Bearer ${token}` } },
    },
  };
}
