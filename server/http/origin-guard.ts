import { cors } from "@connectrpc/connect";
import { refuseBrowser, requestAuthority } from "./browser-refusal.js";
import type { NodeRequest, NodeResponse } from "./connect-adapter.js";

type Req = NodeRequest;
type Res = NodeResponse;

/** How long a browser may cache an allowed origin's preflight answer. */
const PREFLIGHT_MAX_AGE_S = 7200;

export interface OriginGuard {
  /**
   * Lets the call through (returns false, having added the CORS headers an allowed origin
   * needs) or answers it (returns true): a preflight, or a refused cross-origin call.
   */
  answer(req: Req, res: Res): boolean;
}

/**
 * Cross-origin calls (from a web page of another origin) are refused, unless the origin is
 * one the operator named (CONSOLE_ALLOWED_ORIGINS). Browsers say where a page comes from in
 * the Origin header; agents, the CLI, grpc and buf curl send none, and the console's own page
 * sends this server's address.
 *
 * A browser would already keep a foreign page from reading our answers (no
 * Access-Control-Allow-Origin), and it preflights every call that carries a token or a
 * Connect content type. Refusing the call itself, before any handler, does not lean on
 * that: a request a browser sends without asking first (a form-like POST, a call from a
 * page that never reads the answer) reaches no handler either.
 *
 * gRPC calls on the bare HTTP/2 stream (prior knowledge, server/grpc/) do not pass
 * here: browsers speak cleartext HTTP/1.1 only, and their content type would need a
 * preflight, refused here.
 */
export function createOriginGuard(allowedOrigins: readonly string[]): OriginGuard {
  const allowed = new Set(allowedOrigins.map((o) => o.toLowerCase()));
  return {
    answer(req, res) {
      const origin = req.headers.origin;
      if (origin === undefined) return false;
      if (isSameOrigin(origin, req)) return false;
      const preflight =
        req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
      if (!allowed.has(origin.toLowerCase())) {
        refuse(res, origin, preflight);
        return true;
      }
      // An allowed origin. The answer depends on the Origin header: caches must keep it apart.
      res.setHeader("vary", "origin");
      res.setHeader("access-control-allow-origin", origin);
      if (preflight) {
        res.writeHead(204, {
          "access-control-allow-methods": cors.allowedMethods.join(", "),
          // The token travels in Authorization; no cookies, so no credentials mode.
          "access-control-allow-headers": [...cors.allowedHeaders, "authorization"].join(", "),
          "access-control-max-age": String(PREFLIGHT_MAX_AGE_S),
        });
        res.end();
        return true;
      }
      res.setHeader("access-control-expose-headers", cors.exposedHeaders.join(", "));
      return false;
    },
  };
}

/**
 * The page's origin names the host this request was sent to (Host, or :authority over
 * HTTP/2). The scheme is not compared: the server speaks cleartext, and a TLS proxy in front
 * of it keeps the Host while the page's origin says https.
 */
function isSameOrigin(origin: string, req: Req): boolean {
  const authority = requestAuthority(req);
  if (authority === undefined) return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false; // "null" (a sandboxed frame, a file: page) or garbage: never ours
  }
  return host !== "" && host === authority.toLowerCase();
}

function refuse(res: Res, origin: string, preflight: boolean): void {
  const message =
    `cross-origin: calls from the web origin ${JSON.stringify(origin.slice(0, 200))} are refused; ` +
    "the server's operator may allow it with CONSOLE_ALLOWED_ORIGINS";
  refuseBrowser(res, message, !preflight);
}
