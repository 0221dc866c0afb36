import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { whoAmI } from "@team-protocols/mcp/identity.js";
import { createTeamMcpServer, stdioConfig } from "@team-protocols/mcp/team-mcp-server.js";
import { newInboxCursor } from "@team-protocols/mcp/wait-for-messages.js";
import type { Command } from "commander";
import { type ConnectionOptions, clientFor, connectionOptions } from "../context.js";

/** `team mcp`: this member's tools for an LLM agent, as an MCP server on stdin/stdout. */
export function mcpCommand(program: Command): void {
  connectionOptions(
    program
      .command("mcp")
      .description(
        "serve the team's tools to an LLM agent over MCP on stdio (one process per agent)",
      ),
  ).action(async (o: ConnectionOptions) => {
    const client = clientFor(o);
    // Who the token is, once: the tools listed depend on the role.
    const me = await whoAmI(client);
    const server = createTeamMcpServer({
      client,
      me,
      cursor: newInboxCursor(),
      configFor: (token) => stdioConfig(o.url, token),
    });
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
      // The agent runtime ends the bridge by closing its stdin.
      process.stdin.once("end", () => void server.close());
    });
    await server.connect(transport);
    await closed;
    // The MCP stdio contract: the server ends when its client closes stdin. A wait in flight
    // and the client's HTTP/2 session would keep this process alive (an orphan per agent
    // run), and nothing is left to do: what was returned is acked or will be redelivered.
    process.exit(0);
  });
}
