import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { whoAmI } from "@team-protocols/client/identity.js";
import {
  type ChannelPush,
  type PushMode,
  startChannelPush,
} from "@team-protocols/mcp/channel-push.js";
import { createTeamMcpServer, stdioConfig } from "@team-protocols/mcp/team-mcp-server.js";
import { newInboxCursor } from "@team-protocols/mcp/wait-for-messages.js";
import type { Command } from "commander";
import { type ConnectionOptions, clientFor, connectionOptions } from "../context.js";

interface McpOptions extends ConnectionOptions {
  push: boolean;
  pushAck: boolean;
}

/** `team mcp`: this member's tools for an LLM agent, as an MCP server on stdin/stdout. */
export function mcpCommand(program: Command): void {
  connectionOptions(
    program
      .command("mcp")
      .description(
        "serve the team's tools to an LLM agent over MCP on stdio (one process per agent)",
      )
      .option("--no-push", "do not push inbox messages as Claude Code channel events")
      .option(
        "--push-ack",
        "ack each pushed message once its event was written (for a Claude Code session that shows this server's channel events)",
        false,
      ),
  ).action(async (o: McpOptions) => {
    const client = clientFor(o);
    // Who the token is, once: the tools listed depend on the role.
    const me = await whoAmI(client);
    const cursor = newInboxCursor();
    const push: PushMode | undefined = o.push ? (o.pushAck ? "ack" : "notify") : undefined;
    const server = createTeamMcpServer({
      client,
      me,
      cursor,
      configFor: (token) => stdioConfig(o.url, token),
      push,
    });
    let pushing: ChannelPush | undefined;
    if (push && me.role !== "observer") {
      // Events only once the client has finished its handshake.
      server.server.oninitialized = () => {
        pushing = startChannelPush({
          client,
          mode: push,
          cursor,
          notify: (event) => server.server.notification(event),
          onError: (err) =>
            process.stderr.write(
              `team mcp: channel push stopped: ${err instanceof Error ? err.message : String(err)}\n`,
            ),
        });
      };
    }
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
      // The agent runtime ends the bridge by closing its stdin.
      process.stdin.once("end", () => void server.close());
    });
    await server.connect(transport);
    await closed;
    // Flushes the acks of what was pushed, but never holds the exit for long: what is not
    // acked is pushed again by the next bridge.
    await Promise.race([pushing?.stop(), new Promise((done) => setTimeout(done, 2_000).unref())]);
    // The MCP stdio contract: the server ends when its client closes stdin. A wait in flight
    // and the client's HTTP/2 session would keep this process alive (an orphan per agent
    // run), and nothing is left to do: what was returned is acked or will be redelivered.
    process.exit(0);
  });
}
