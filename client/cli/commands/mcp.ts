import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { type Identity, whoAmI } from "@team-protocols/client/identity.js";
import {
  type ChannelPush,
  type PushMode,
  startChannelPush,
} from "@team-protocols/mcp/channel-push.js";
import { createPendingTeamMcpServer, notConnected } from "@team-protocols/mcp/pending-bridge.js";
import { relayPermissionsToLead, relaysPermissions } from "@team-protocols/mcp/permission-lead.js";
import { createTeamMcpServer, httpConfig } from "@team-protocols/mcp/team-mcp-server.js";
import { type InboxCursor, newInboxCursor } from "@team-protocols/mcp/wait-for-messages.js";
import type { Command } from "commander";
import { type ConnectionOptions, clientFor, connectionOptions } from "../context.js";
import { teamMcpConfig } from "../this-team.js";

interface McpOptions extends ConnectionOptions {
  push: boolean;
  permissionRelay: boolean;
  pushAck: boolean;
}

/** `team mcp`: this member's tools for an LLM agent, as an MCP server on stdin/stdout. */
export function mcpCommand(program: Command): void {
  const mcp = program.command("mcp");
  connectionOptions(
    mcp
      .command("config")
      .description(
        "print the MCP configuration (mcpServers JSON) for this member: `team mcp` by absolute paths, or --http for the server's /mcp",
      )
      .option("--http", "the server's own MCP endpoint instead of a stdio bridge", false),
  ).action((o: ConnectionOptions & { http: boolean }) => {
    // The token is printed only when asked for, which this command is; without one, a
    // placeholder shows where it goes.
    const token = o.token ?? "<TEAM_TOKEN>";
    const config = o.http
      ? httpConfig(`${o.url.replace(/\/$/, "")}/mcp`, token)
      : teamMcpConfig(o.url, token);
    process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
    if (!o.token)
      process.stderr.write("team mcp config: TEAM_TOKEN is not set; put a member token in\n");
  });
  connectionOptions(
    mcp
      .description(
        "serve the team's tools to an LLM agent over MCP on stdio (one process per agent)",
      )
      .option("--no-push", "do not push inbox messages as Claude Code channel events")
      .option(
        "--no-permission-relay",
        "do not send Claude Code's permission prompts to the lead (a teammate's channel does by default; --no-push turns it off too)",
      )
      .option(
        "--push-ack",
        "ack each pushed message once its event was written (for a Claude Code session that shows this server's channel events)",
        false,
      ),
  ).action(async (o: McpOptions) => {
    const client = clientFor(o, "member", "mcp");
    const push: PushMode | undefined = o.push ? (o.pushAck ? "ack" : "notify") : undefined;
    const warn = (what: string) => (err: unknown) =>
      process.stderr.write(
        `team mcp: ${what}: ${err instanceof Error ? err.message : String(err)}\n`,
      );
    let pushing: ChannelPush | undefined;
    const startPush = (server: McpServer, me: Identity, cursor: InboxCursor) => {
      if (!push || me.role === "observer") return;
      pushing = startChannelPush({
        client,
        reader: me.name,
        mode: push,
        cursor,
        notify: (event) => server.server.notification(event),
        onError: warn("channel push stopped"),
      });
    };
    // Who the token is, once: the tools listed depend on the role. A server that does not
    // answer (or refuses the token) still gets a bridge, whose tools say why (pending-bridge.ts).
    let me: Identity | undefined;
    let failure: unknown;
    try {
      me = await whoAmI(client);
    } catch (err) {
      failure = err;
      process.stderr.write(`team mcp: ${notConnected(err, o.url)}\n`);
    }
    let server: McpServer;
    let stopRelay: (() => void) | undefined;
    if (me) {
      const known = me;
      const cursor = newInboxCursor(known.name);
      server = createTeamMcpServer({
        client,
        me: known,
        cursor,
        configFor: (token) => teamMcpConfig(o.url, token),
        push,
        permissionRelay: o.permissionRelay,
      });
      // Claude Code's permission prompts go to the lead; its answer comes back as the verdict.
      stopRelay =
        o.push && o.permissionRelay && relaysPermissions(known)
          ? relayPermissionsToLead({
              server: server.server,
              client,
              onError: warn("a permission prompt was not relayed"),
            })
          : undefined;
      // Events only once the client has finished its handshake.
      server.server.oninitialized = () => startPush(server, known, cursor);
    } else {
      const pending: McpServer = createPendingTeamMcpServer({
        client,
        url: o.url,
        failure,
        cursorFor: (who) => newInboxCursor(who.name || undefined),
        configFor: (token) => teamMcpConfig(o.url, token),
        push: push !== undefined,
        onConnected: (who, cursor) => startPush(pending, who, cursor),
        log: (line) => process.stderr.write(`${line}\n`),
      });
      server = pending;
    }
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
      // The agent runtime ends the bridge by closing its stdin.
      process.stdin.once("end", () => void server.close());
    });
    await server.connect(transport);
    await closed;
    stopRelay?.();
    // Flushes the acks of what was pushed, but never holds the exit for long: what is not
    // acked is pushed again by the next bridge.
    await Promise.race([pushing?.stop(), new Promise((done) => setTimeout(done, 2_000).unref())]);
    // The MCP stdio contract: the server ends when its client closes stdin. A wait in flight
    // and the client's HTTP/2 session would keep this process alive (an orphan per agent
    // run), and nothing is left to do: what was returned is acked or will be redelivered.
    process.exit(0);
  });
}
