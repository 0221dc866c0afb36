import { createHash, timingSafeEqual } from "node:crypto";
import type http from "node:http";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Metrics } from "./metrics.js";

export const METRICS_PATH = "/metrics";

// The request handler's own types (HTTP/1.1 and HTTP/2 alike).
type NodeHandler = ReturnType<typeof connectNodeAdapter>;
type Res = Parameters<NodeHandler>[1];

/**
 * `GET /metrics` in the Prometheus text format, on the service's one port. Open like health
 * when `token` is unset (it holds counts only: no team, member or message); with a token
 * (METRICS_TOKEN), only a scraper sending `Authorization: Bearer <token>` reads it.
 */
export function createMetricsEndpoint(metrics: Metrics, token: string | undefined): NodeHandler {
  // Compared as hashes: equal lengths for timingSafeEqual, whatever the client sends.
  const expected = token === undefined ? undefined : sha256(token);
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return answer(res, 405, "GET /metrics\n", { allow: "GET, HEAD" });
    }
    if (expected) {
      // The scheme is case-insensitive (RFC 9110): "bearer" and "BEARER" are "Bearer". (The
      // same match as the auth interceptor's bearerToken(); metrics import nothing of it.)
      const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization?.trim() ?? "")?.[1];
      if (!given || !timingSafeEqual(sha256(given), expected)) {
        return answer(res, 401, "metrics need the METRICS_TOKEN as a bearer token\n", {
          "www-authenticate": 'Bearer realm="metrics"',
        });
      }
    }
    metrics.registry.metrics().then(
      (text) =>
        answer(res, 200, req.method === "HEAD" ? "" : text, {
          "content-type": metrics.registry.contentType,
        }),
      () => answer(res, 500, "metrics could not be collected\n", {}),
    );
  };
}

const sha256 = (s: string) => createHash("sha256").update(s).digest();

function answer(res: Res, status: number, body: string, headers: Record<string, string>): void {
  if (res.headersSent || res.writableEnded) return;
  (res as http.ServerResponse).writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "cache-control": "no-store",
    ...headers,
  });
  res.end(body);
}
