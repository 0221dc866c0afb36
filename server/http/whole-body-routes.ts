import { type ConnectRouter, createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { WholeBodies } from "./held-bodies.js";

/**
 * The requests to `routes` whose handler can do nothing before their body has ended: a POST
 * to a unary or server-streaming method, in a content type one of its protocols serves.
 * Such a method takes one request message, and connect reads to the body's end before it
 * calls the method (unary: the whole body; server streaming: to check there is no second
 * message). Client and bidi streams (reflection) are read as they go: never held. Neither is
 * a content type none of connect's protocols serves (refused at once, 415), nor a request
 * that has no RPC route (/mcp, 404s).
 */
export function wholeBodyRoutes(
  routes: (router: ConnectRouter) => void,
  maxBytes: number,
): WholeBodies {
  const router = createConnectRouter();
  routes(router);
  const byPath = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) {
    const kind = handler.method.methodKind;
    if (kind === "unary" || kind === "server_streaming") byPath.set(handler.requestPath, handler);
  }
  return {
    maxBytes,
    holds(headers) {
      if (headers[":method"] !== "POST") return false;
      const path = headers[":path"] ?? "";
      const query = path.indexOf("?");
      const handler = byPath.get(query < 0 ? path : path.slice(0, query));
      return handler?.supportedContentType(headers["content-type"] ?? null) === true;
    },
  };
}
