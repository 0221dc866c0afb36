import type { IncomingHttpHeaders } from "node:http";
import { MAX_BATCH_SIZE } from "@modelcontextprotocol/sdk/server/requestBody.js";
import { isJsonContentType } from "@modelcontextprotocol/sdk/shared/mediaType.js";
import type {
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";

/** An HTTP answer that refuses a POST before any message reaches the MCP server. */
export interface PostRefusal {
  status: number;
  /** The JSON-RPC error code of the body. */
  code: number;
  message: string;
}

/**
 * The checks the SDK's StreamableHTTPServerTransport makes of a POST in its stateless,
 * JSON-response mode, in its order and with its statuses and sentences, so that its `Client`
 * sees what it saw before: the messages, or why not.
 */
export function readMcpPost(
  headers: IncomingHttpHeaders,
  body: unknown,
): { messages: JSONRPCMessage[] } | PostRefusal {
  const accept = headers.accept;
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) {
    return refusal(
      406,
      -32000,
      "Not Acceptable: Client must accept both application/json and text/event-stream",
    );
  }
  if (!isJsonContentType(headers["content-type"])) {
    return refusal(415, -32000, "Unsupported Media Type: Content-Type must be application/json");
  }
  if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) {
    return refusal(
      400,
      -32600,
      `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`,
    );
  }
  const messages: JSONRPCMessage[] = [];
  for (const item of Array.isArray(body) ? body : [body]) {
    const parsed = JSONRPCMessageSchema.safeParse(item);
    if (!parsed.success) return refusal(400, -32700, "Parse error: Invalid JSON-RPC message");
    messages.push(parsed.data);
  }
  const initializing = messages.some(isInitializeRequest);
  if (initializing && messages.length > 1) {
    return refusal(400, -32600, "Invalid Request: Only one initialization request is allowed");
  }
  const version = headers["mcp-protocol-version"];
  if (
    !initializing &&
    version !== undefined &&
    !SUPPORTED_PROTOCOL_VERSIONS.includes(`${version}`)
  ) {
    return refusal(
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} ` +
        `(supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")})`,
    );
  }
  return { messages };
}

const refusal = (status: number, code: number, message: string): PostRefusal => ({
  status,
  code,
  message,
});

/** What one POST gets back: 202 and no body, or 200 with the answers. */
export type Exchange =
  | { status: 202 }
  | { status: 200; body: JSONRPCMessage | JSONRPCMessage[] }
  | { status: "closed" };

/**
 * An MCP transport that carries one POST's messages at a time to the server it is connected
 * to and gathers the server's answers to them: what the SDK's transport does in its stateless,
 * JSON-response mode, without turning Node's request into a web Request and back, and kept
 * connected so that the server is built once and reused (mcp-server-pool.ts). The caller
 * never gives it a second POST before the first one's answers are all in.
 */
export class JsonRequestTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: Transport["onmessage"];
  private current:
    | { waiting: Map<RequestId, JSONRPCMessage | undefined>; done(e: Exchange): void }
    | undefined;
  private closed = false;

  async start(): Promise<void> {}

  /** Hands `messages` to the server; settles when every request among them is answered. */
  exchange(messages: JSONRPCMessage[], headers: IncomingHttpHeaders): Promise<Exchange> {
    if (this.closed) return Promise.resolve({ status: "closed" });
    if (this.current) throw new Error("a transport serves one POST at a time");
    const extra = { requestInfo: { headers } };
    const requests = messages.filter(isJSONRPCRequest);
    if (requests.length === 0) {
      // Notifications and responses only: nothing to answer (the SDK's 202).
      for (const message of messages) this.onmessage?.(message, extra);
      return Promise.resolve({ status: 202 });
    }
    return new Promise<Exchange>((resolve) => {
      const waiting = new Map<RequestId, JSONRPCMessage | undefined>();
      for (const r of requests) waiting.set(r.id, undefined);
      this.current = {
        waiting,
        done: (e) => {
          this.current = undefined;
          resolve(e);
        },
      };
      for (const message of messages) this.onmessage?.(message, extra);
    });
  }

  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    // Progress and other notifications would need an SSE stream; the JSON mode drops them.
    if (!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message)) return;
    const current = this.current;
    const id = message.id;
    if (id === undefined || !current?.waiting.has(id)) {
      throw new Error(`No connection established for request ID: ${String(id)}`);
    }
    current.waiting.set(id, message);
    const answers = [...current.waiting.values()];
    if (answers.some((a) => a === undefined)) return;
    const body = answers as JSONRPCMessage[];
    current.done({ status: 200, body: body.length === 1 ? (body[0] as JSONRPCMessage) : body });
  }

  /** Ends the server's work in progress (its handlers are aborted); a POST still open settles. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.current?.done({ status: "closed" });
    this.onclose?.();
  }
}
