import type http from "node:http";
import type http2 from "node:http2";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createConnectRouter,
} from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { Logger } from "../logger.js";

export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;
export type NodeHandler = (req: NodeRequest, res: NodeResponse) => void;

/**
 * Request encodings accepted (and offered to responses), in connect-node's default order;
 * the gRPC calls on the bare stream accept the same (grpc/grpc-calls.ts).
 */
export const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];

export interface ConnectAdapterOptions {
  /** The largest request message accepted (connect's readMaxBytes). */
  readMaxBytes: number;
  routes(router: ConnectRouter): void;
  /** Values handed to every call's handler context (connectNodeAdapter's option). */
  contextValues(req: NodeRequest): ContextValues;
  /** Requests for a path no RPC has (after one look-up): /mcp, or 404. */
  fallback: NodeHandler;
  logger: Logger;
}

/**
 * What connectNodeAdapter does, written out so that what lies between Node's request and
 * connect's universal handlers is ours and visible in one place: a Node request becomes a
 * UniversalServerRequest, the router's handler for its path answers it, and the
 * UniversalServerResponse is written back (with connect-node's own two converters).
 *
 * Between them, once per call:
 * - The request body is read with an iterator that does not destroy the request when the
 *   handler stops early (a message over readMaxBytes, an error in the first of several
 *   messages): the rest is then read and dropped (oversized-request-bodies.ts), so the
 *   refusal reaches the client and the connection stays usable. connect-node's own reader
 *   (`for await` over the request) would destroy it.
 * - A handler that fails outside the protocol (connect-node printed it with console.error)
 *   is logged as one of our JSON lines.
 *
 * What the responses need is fixed inside connect-es itself, where they are made, by the
 * patches in patches/ (applied by `npm ci`, postinstall: patch-package), not by rewriting
 * what comes out: a UniversalServerResponse already holds the serialized and compressed
 * error, so capping a message there would mean decompressing and compressing it again,
 * which is the cost being avoided. The patches:
 * - every error message a server writes (grpc-message, google.rpc.Status, a Connect error
 *   body or end-stream) is cut to 1024 characters before it is serialized or compressed
 *   (`protocol/wire-message.js`); a 1 MiB bad value used to come back whole;
 * - a request that cannot be decoded is InvalidArgument, not Internal (a protobuf that does
 *   not parse, a compressed envelope without an encoding, a truncated gzip or br body).
 * test/wire/connect-error-echo.test.ts and test/wire/fuzz.test.ts show both on every protocol.
 */
export function createConnectAdapter(options: ConnectAdapterOptions): NodeHandler {
  const { logger } = options;
  const router = createConnectRouter({
    readMaxBytes: options.readMaxBytes,
    acceptCompression: ACCEPT_COMPRESSION,
  });
  options.routes(router);
  const handlers = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) handlers.set(handler.requestPath, handler);

  return (req, res) => {
    const url = req.url ?? "";
    const query = url.indexOf("?");
    const handler = handlers.get(query < 0 ? url : url.slice(0, query));
    if (!handler) return options.fallback(req, res);
    let uReq: UniversalServerRequest;
    try {
      uReq = universalRequestFromNodeRequest(req, res, undefined, options.contextValues(req));
    } catch (err) {
      // No authority (an HTTP/1.0 request without Host). connect-node 2.1.2 bug, to file:
      // connectNodeAdapter calls universalRequestFromNodeRequest unguarded in the request
      // listener, and its throw ("unable to determine request authority") is an uncaught
      // exception that ends the process. Repro against any connectNodeAdapter server:
      //   printf 'POST /pkg.Service/Method HTTP/1.0\r\ncontent-length: 0\r\n\r\n' | nc host port
      logger.info({ event: "rpc_refused", err }, "request without an authority");
      res.writeHead(400).end();
      return;
    }
    // Not destroyed on return: see above.
    uReq.body = req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((reason: unknown) => {
        // Aborted: the client went away while the response was written; nobody to tell.
        if (ConnectError.from(reason).code === Code.Aborted) return;
        logger.error(
          {
            event: "rpc_error",
            method: `${handler.service.typeName}/${handler.method.name}`,
            err: reason,
          },
          "the handler failed outside the protocol",
        );
      });
  };
}
