import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { Identity } from "./identity.js";
import { registerTeamPrompts } from "./prompts.js";
import { ToolRegistry } from "./tool-registry.js";
import { registerTeamTools, type ToolContext } from "./tools.js";
import type { InboxCursor } from "./wait-for-messages.js";

export interface TeamMcpOptions {
  client: TeamClient;
  me: Identity;
  cursor: InboxCursor;
  configFor: ToolContext["configFor"];
}

/** One member's MCP server: the team's tools and prompts over its client. */
export function createTeamMcpServer(o: TeamMcpOptions): McpServer {
  const server = new McpServer(
    { name: "team-protocols", version: "0.1.0" },
    {
      instructions:
        o.me.role === "observer"
          ? `You are "${o.me.name}", an observer of a team whose protocols a server enforces: ` +
            "you may read (list_members, list_requests, get_request, await_request, journal) " +
            "and nothing else; you receive no messages."
          : `You are "${o.me.name}" (${o.me.role}) in a team whose protocols a server enforces. ` +
            "Call wait_for_messages to receive messages; answer protocol messages with send_message " +
            "exactly as each message says. A refused call starts with the rule id and how to fix it.",
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

/** What a member pastes into a generic MCP client for the stdio bridge. */
export function stdioConfig(url: string, token: string): unknown {
  return {
    mcpServers: {
      team: { command: "npx", args: ["team", "mcp"], env: { TEAM_URL: url, TEAM_TOKEN: token } },
    },
  };
}

/** The same for the server's own /mcp endpoint. */
export function httpConfig(mcpUrl: string, token: string): unknown {
  return {
    mcpServers: {
      team: { type: "http", url: mcpUrl, headers: { Authorization: `Bearer ${token}` } },
    },
  };
}
