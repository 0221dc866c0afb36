import type { Transport } from "@connectrpc/connect";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { createTeamClient } from "@team-protocols/client/team-client.js";
import { createTeamMcpServer, httpConfig } from "@team-protocols/mcp/team-mcp-server.js";
import type { InboxCursor } from "@team-protocols/mcp/wait-for-messages.js";
import type { Caller } from "../caller.js";
import { TEAM_CLIENT_HEADER } from "../interceptors/auth.js";
import { JsonRequestTransport } from "./json-request-transport.js";

/** What a member's server takes from the request it serves now, never from an earlier one. */
export interface RequestBinding {
  /** The request's own `authorization`, which every tool call's RPC carries. */
  authorization: string;
  /** This endpoint's URL as the request reached it (add_member's configuration). */
  mcpUrl: string;
}

/** One member's MCP server, connected to its transport, ready to serve one POST at a time. */
export interface MemberMcpServer {
  /** The identity it was built for (memberKey): instructions and tool lists depend on it. */
  readonly key: string;
  readonly cursor: InboxCursor;
  readonly transport: JsonRequestTransport;
  /** Set before each POST it serves. */
  binding: RequestBinding;
  close(): void;
}

/**
 * Everything a member's server was built from: the member's id with its name, role, team
 * and lead, so that a server is only ever reused for the same member as the same identity.
 * The token is not in it: a server holds none, each request lends it its own (binding).
 */
export function memberKey(caller: Caller): string {
  return JSON.stringify([caller.id, caller.teamName, caller.name, caller.role, caller.lead.name]);
}

/** The member's MCP server over the in-process RPC transport `rpc`, connected and idle. */
export async function buildMemberMcpServer(
  caller: Caller,
  rpc: Transport,
  cursor: InboxCursor,
  binding: RequestBinding,
): Promise<MemberMcpServer> {
  const transport = new JsonRequestTransport();
  const member: MemberMcpServer = {
    key: memberKey(caller),
    cursor,
    transport,
    binding,
    close: () => {
      void server.close();
    },
  };
  const client = createTeamClient({
    baseUrl: "http://localhost",
    transport: authenticated(rpc, () => member.binding.authorization),
  });
  const server: McpServer = createTeamMcpServer({
    client,
    me: { team: caller.teamName, name: caller.name, role: caller.role, lead: caller.lead.name },
    cursor,
    configFor: (newToken) => httpConfig(member.binding.mcpUrl, newToken),
  });
  await server.connect(transport);
  return member;
}

/** `transport`, each call carrying the `authorization` of the request served now. */
function authenticated(transport: Transport, authorization: () => string): Transport {
  const withAuth = (header: Parameters<Transport["unary"]>[3]) => {
    const headers = new Headers(header);
    headers.set("authorization", authorization());
    // Presence: this member was seen through MCP (interceptors/auth.ts).
    headers.set(TEAM_CLIENT_HEADER, "mcp");
    return headers;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, timeoutMs, withAuth(header), input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, timeoutMs, withAuth(header), input, contextValues),
  };
}
