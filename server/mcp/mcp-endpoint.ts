import type http from "node:http";
import { type ConnectRouter, createRouterTransport } from "@connectrpc/connect";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createTeamClient } from "@team-protocols/client/team-client.js";
import { teamErrorInterceptor } from "@team-protocols/client/team-error.js";
import { createTeamMcpServer, httpConfig } from "@team-protocols/mcp/team-mcp-server.js";
import { type InboxCursor, newInboxCursor } from "@team-protocols/mcp/wait-for-messages.js";
import type { Caller } from "../caller.js";
import type { NodeHandler } from "../http/connect-adapter.js";
import { bearerToken } from "../interceptors/auth.js";
import type { Logger } from "../logger.js";

export const MCP_PATH = "/mcp";

export interface McpEndpointOptions {
  /** The app's routes: tool calls run through every interceptor an RPC does. */
  routes(router: ConnectRouter): void;
  /** The server's own token check (auth interceptor); throws with the reason. */
  authenticate(token: string | undefined): Promise<Caller>;
  /** The request body limit of the RPCs. */
  readMaxBytes: number;
  logger: Logger;
}

type Req = Parameters<NodeHandler>[0];
type Res = Parameters<NodeHandler>[1];

// Members whose wait_for_messages cursor this process keeps (wait-for-messages.ts); the
// oldest is forgotten first, which only means a crash-like restart of its at-least-once.
const MAX_CURSORS = 10_000;

/**
 * `/mcp`: the team's MCP tools over Streamable HTTP, stateless (a server and a transport per
 * request). The member is the bearer token's, checked as for RPCs; the tools call the
 * service in-process through the same routes and interceptors, so every rule is the
 * server's, never the bridge's.
 */
export function createMcpEndpoint(o: McpEndpointOptions): NodeHandler {
  const cursors = new Map<number, InboxCursor>();
  const cursorOf = (memberId: number) => {
    let c = cursors.get(memberId);
    if (!c) {
      c = newInboxCursor();
      cursors.set(memberId, c);
      if (cursors.size > MAX_CURSORS) cursors.delete(cursors.keys().next().value as number);
    }
    return c;
  };
  const serve = async (req: Req, res: Res) => {
    if (req.method !== "POST") {
      // Stateless: no session, so no GET stream to resume and no DELETE to end one.
      return answer(res, 405, "this endpoint is stateless: send MCP requests with POST", {
        allow: "POST",
      });
    }
    const token = bearerToken(req.headers.authorization);
    let caller: Caller;
    try {
      caller = await o.authenticate(token);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return answer(res, 401, `unauthenticated: ${why}`, { "www-authenticate": "Bearer" });
    }
    const body = await readBody(req, o.readMaxBytes);
    if (body === "too large") {
      return answer(res, 413, `request body larger than ${o.readMaxBytes} bytes`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return answer(res, 400, "the body is not JSON", {}, -32700);
    }
    const bearer = `Bearer ${token}`;
    const client = createTeamClient({
      baseUrl: `http://${req.headers.host ?? "localhost"}`,
      transport: createRouterTransport(o.routes, {
        transport: {
          interceptors: [
            teamErrorInterceptor,
            (next) => (r) => {
              r.header.set("authorization", bearer);
              return next(r);
            },
          ],
        },
      }),
    });
    const mcpUrl = `http://${req.headers.host ?? "HOST:8080"}${MCP_PATH}`;
    const server = createTeamMcpServer({
      client,
      me: { team: caller.teamName, name: caller.name, role: caller.role, lead: caller.lead.name },
      cursor: cursorOf(caller.id),
      configFor: (newToken) => httpConfig(mcpUrl, newToken),
    });
    const transport = new StreamableHTTPServerTransport({
      // No sessionIdGenerator: stateless. JSON answers: no SSE stream to keep open.
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req as http.IncomingMessage, res as http.ServerResponse, parsed);
  };
  return (req, res) => {
    serve(req, res).catch((err: unknown) => {
      o.logger.error({ event: "mcp_error", err }, "the /mcp handler failed");
      if (!res.headersSent) answer(res, 500, "internal error");
      else res.destroy();
    });
  };
}

/** A JSON-RPC error as the body, so MCP clients show the message. */
function answer(
  res: Res,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code = -32000,
): void {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null });
  (res as http.ServerResponse).writeHead(status, {
    "content-type": "application/json",
    ...headers,
  });
  res.end(body);
}

/** The whole body, or "too large" as soon as it passes `max` (the rest is left unread). */
function readBody(req: Req, max: number): Promise<Buffer | "too large"> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > max) return resolve("too large");
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off("data", onData);
        req.pause();
        resolve("too large");
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}
