import { Code } from "@connectrpc/connect";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type Identity, whoAmI } from "@team-protocols/client/identity.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { TeamError } from "@team-protocols/client/team-error.js";
import { ToolRegistry } from "./tool-registry.js";
import { registerTeamTools, type ToolContext } from "./tools.js";
import type { InboxCursor } from "./wait-for-messages.js";

/**
 * A stdio bridge whose server could not tell it who it is at start (unreachable, or the
 * token refused). It serves anyway: a runtime whose MCP server exits shows the model nothing
 * but a missing tool ("Connection closed"), while this one lists the team's tools and answers
 * each call with an isError result that says what is wrong and what to do. Every call tries
 * the server again; the first that reaches it swaps in the member's own tools (listed for its
 * role; tools/list_changed tells the client) and runs on them.
 *
 * The stand-ins are a teammate's tools (the common case; the lead's extra tools appear on
 * recovery). No prompts and no permission relay are offered: both are declared at the MCP
 * handshake and depend on the role, which is not known then.
 */
export interface PendingBridgeOptions {
  client: TeamClient;
  url: string;
  /** What the first try answered. */
  failure: unknown;
  /** The member's inbox cursor, once its name is known. */
  cursorFor(me: Identity): InboxCursor;
  configFor: ToolContext["configFor"];
  /** Declares Claude Code's channel (pushing starts in `onConnected`). */
  push: boolean;
  /** Called once, when the server first answers: channel push starts there. */
  onConnected(me: Identity, cursor: InboxCursor): void;
  /** One line for the operator (stderr), on each change: reached, or still failing. */
  log(line: string): void;
}

export function createPendingTeamMcpServer(o: PendingBridgeOptions): McpServer {
  const server = new McpServer(
    { name: "team-protocols", version: "0.1.0" },
    {
      ...(o.push ? { capabilities: { experimental: { "claude/channel": {} } } } : {}),
      instructions:
        `This bridge could not reach its team server at ${o.url} when it started (${notConnected(o.failure, o.url).split(": ")[0]}). ` +
        "Its tools say what is wrong when called and work as soon as the server answers; " +
        "the team's messages arrive then.",
    },
  );
  const served = new ToolRegistry();
  const placeholder: Identity = { name: "", role: "teammate", lead: "team-lead" };
  const shapeOf = new ToolRegistry();
  registerTeamTools(shapeOf, {
    client: o.client,
    me: placeholder,
    cursor: o.cursorFor(placeholder),
    configFor: o.configFor,
  });

  let connected = false;
  let trying: Promise<unknown> | undefined;
  /** One try at a time; resolves to undefined once the member's tools are served. */
  const connect = (): Promise<unknown> =>
    (trying ??= (async () => {
      try {
        const me = await whoAmI(o.client);
        const cursor = o.cursorFor(me);
        const own = new ToolRegistry();
        registerTeamTools(own, { client: o.client, me, cursor, configFor: o.configFor });
        served.replaceWith(own);
        connected = true;
        o.log(`team mcp: reached ${o.url} as "${me.name}" (${me.role}); serving its tools`);
        void server.sendToolListChanged();
        o.onConnected(me, cursor);
        return undefined;
      } catch (err) {
        o.log(`team mcp: ${notConnected(err, o.url)}`);
        return err;
      } finally {
        trying = undefined;
      }
    })());

  served.replaceWith(
    shapeOf.standIns(async (name, args, signal): Promise<CallToolResult> => {
      const failure = connected ? undefined : await connect();
      if (failure !== undefined) {
        return { content: [{ type: "text", text: notConnected(failure, o.url) }], isError: true };
      }
      return served.call(name, args, signal);
    }),
  );
  served.serve(server);
  return server;
}

/** Why the bridge has no server yet, and what the model (or its user) can do about it. */
export function notConnected(err: unknown, url: string): string {
  const e = TeamError.fromError(err);
  if (e.code === Code.Unauthenticated || e.code === Code.PermissionDenied) {
    return (
      `${e.codeName}: the team server at ${url} refuses this bridge's token (TEAM_TOKEN): ${e.rawMessage}. ` +
      "Nothing was sent. Calling again will not help: tell the user to put a member's valid token in the MCP configuration."
    );
  }
  return (
    `unavailable: the team server at ${url} cannot be reached (${e.rawMessage}). ` +
    "Nothing was sent. This bridge tries again on every call: call again in a little while, " +
    "or tell the user to start the server or correct TEAM_URL."
  );
}
