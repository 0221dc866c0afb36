import type http from "node:http";
import type { Transport } from "@connectrpc/connect";
import { type InboxCursor, newInboxCursor } from "@team-protocols/mcp/wait-for-messages.js";
import type { Caller } from "../caller.js";
import { LimitError } from "../errors.js";
import type { NodeHandler } from "../http/connect-adapter.js";
import { bearerToken } from "../interceptors/auth.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { readMcpPost } from "./json-request-transport.js";
import { createInstancePool } from "./mcp-server-pool.js";
import { type WaitCount, waitCount } from "./mcp-waits.js";
import {
  buildMemberMcpServer,
  type MemberMcpServer,
  memberKey,
  type RequestBinding,
} from "./member-mcp-server.js";

export const MCP_PATH = "/mcp";

export interface McpEndpointOptions {
  /**
   * The service in-process (made once, on the first request): tool calls run through every
   * interceptor an RPC does (in-process-rpc.ts).
   */
  rpcTransport(): Transport;
  /** The server's own token check (auth interceptor); throws with the reason. */
  authenticate(token: string | undefined, address: string | undefined): Promise<Caller>;
  /** The request body limit of the RPCs. */
  readMaxBytes: number;
  /** wait_for_messages calls one member may have pending at once. Default 4. */
  maxWaitsPerMember?: number;
  metrics?: Pick<Metrics, "refused"> | undefined;
  logger: Logger;
}

type Req = Parameters<NodeHandler>[0];
type Res = Parameters<NodeHandler>[1];

// Members whose wait_for_messages cursor this process keeps (wait-for-messages.ts); the
// oldest is forgotten first, which only means a crash-like restart of its at-least-once.
const MAX_CURSORS = 10_000;

// Built MCP servers kept idle for reuse: per member, as many as it usually has requests at
// once; in all, enough for the members active at a time (each server holds its tools).
const MAX_IDLE_SERVERS_PER_MEMBER = 8;
const MAX_IDLE_SERVERS = 256;

/** The limit's name in refusals and metrics. */
export const MCP_WAITS_LIMIT = "mcp-waits-per-member";

/**
 * `/mcp`: the team's MCP tools over Streamable HTTP, stateless (no session: each POST is
 * served on its own by one of the member's MCP servers, built once and reused, never by two
 * POSTs at once; the in-process RPC transport under them is made once). The member is the
 * bearer token's, checked as for RPCs; the tools call the service in-process through the
 * same routes and interceptors, so every rule is the server's, never the bridge's.
 */
export function createMcpEndpoint(o: McpEndpointOptions): NodeHandler {
  const maxWaits = o.maxWaitsPerMember ?? 4;
  // Building the transport (every method's interceptor chain) was most of a call's cost when
  // it was done per request: it depends on nothing of the request, so it is made once. What
  // does (the caller's token) is added to each call's headers (member-mcp-server.ts).
  let shared: Transport | undefined;
  const rpcTransport = () => (shared ??= o.rpcTransport());
  // Pending wait_for_messages calls per member. They run one at a time per member (the
  // cursor's queue), so past a few more only hold memory (an MCP server, a request, a
  // response each): refused at once instead.
  const waits = new Map<number, number>();
  const cursors = new Map<number, InboxCursor>();
  const cursorOf = (memberId: number, name: string) => {
    let c = cursors.get(memberId);
    if (!c) {
      c = newInboxCursor(name);
      cursors.set(memberId, c);
      if (cursors.size > MAX_CURSORS) cursors.delete(cursors.keys().next().value as number);
    }
    return c;
  };
  // Built servers of members, idle between requests (building one was most of a call's
  // cost). Taken for one request and given back once it was answered. A server is reused
  // only for the identity it was built for (memberKey) and holds no token; those of a member
  // gone or changed are never taken again and age out of the pool.
  const pool = createInstancePool<MemberMcpServer>({
    maxIdlePerKey: MAX_IDLE_SERVERS_PER_MEMBER,
    maxIdle: MAX_IDLE_SERVERS,
    close: (member) => member.close(),
  });
  const checkOut = async (caller: Caller, binding: RequestBinding) => {
    const key = memberKey(caller);
    const cursor = cursorOf(caller.id, caller.name);
    for (let member = pool.take(key); member; member = pool.take(key)) {
      // Its cursor forgotten since (MAX_CURSORS): the member's one cursor is the new one.
      if (member.cursor !== cursor) {
        member.close();
        continue;
      }
      member.binding = binding;
      return member;
    }
    return buildMemberMcpServer(caller, rpcTransport(), cursor, binding);
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
      caller = await o.authenticate(token, req.socket?.remoteAddress);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      // Failed authentication throttled (auth-throttle.ts): when to try again, as HTTP says it.
      const retryMs = err instanceof LimitError ? err.retryAfterMs : undefined;
      return answer(res, 401, `unauthenticated: ${why}`, {
        "www-authenticate": "Bearer",
        ...(retryMs !== undefined ? { "retry-after": String(Math.ceil(retryMs / 1000)) } : {}),
      });
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
    const wanted = waitCount(parsed);
    const pending = waits.get(caller.id) ?? 0;
    if (wanted.count > 0 && pending + wanted.count > maxWaits) {
      o.metrics?.refused(MCP_WAITS_LIMIT, "limit");
      return refuseWaits(res, wanted, caller.name, maxWaits);
    }
    if (wanted.count > 0) {
      waits.set(caller.id, pending + wanted.count);
      res.once("close", () => {
        const left = (waits.get(caller.id) ?? wanted.count) - wanted.count;
        if (left > 0) waits.set(caller.id, left);
        else waits.delete(caller.id);
      });
    }
    const read = readMcpPost(req.headers, parsed);
    if ("status" in read) return answer(res, read.status, read.message, {}, read.code);
    const binding = {
      authorization: `Bearer ${token}`,
      mcpUrl: `http://${req.headers.host ?? "HOST:8080"}${MCP_PATH}`,
    };
    const member = await checkOut(caller, binding);
    let answered = false;
    res.once("close", () => {
      // Gone before its answers: the server's work for it is cut short, and a server cut
      // short is not reused.
      if (!answered) member.close();
    });
    const exchange = await member.transport.exchange(read.messages, req.headers);
    if (exchange.status === "closed") return;
    answered = true;
    if (exchange.status === 202) {
      res.writeHead(202);
      res.end();
    } else {
      (res as http.ServerResponse).writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(exchange.body));
    }
    pool.give(member.key, member);
  };
  return (req, res) => {
    serve(req, res).catch((err: unknown) => {
      o.logger.error({ event: "mcp_error", err }, "the /mcp handler failed");
      if (!res.headersSent) answer(res, 500, "internal error");
      else res.destroy();
    });
  };
}

/**
 * Past the cap: each wait_for_messages call of the message gets an isError result naming the
 * limit (what a model reads and can act on), the message's other requests a JSON-RPC error.
 */
function refuseWaits(res: Res, wanted: WaitCount, member: string, max: number): void {
  const text =
    `${MCP_WAITS_LIMIT}: member "${member}" already has ${max} wait_for_messages calls ` +
    "pending (MAX_MCP_WAITS_PER_MEMBER); wait for one to return before calling it again";
  const answers = wanted.ids.map(({ id, isWait }) =>
    isWait
      ? { jsonrpc: "2.0", id, result: { content: [{ type: "text", text }], isError: true } }
      : { jsonrpc: "2.0", id, error: { code: -32000, message: text } },
  );
  (res as http.ServerResponse).writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(wanted.batch ? answers : answers[0]));
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
