import type { NodeRequest, NodeResponse } from "./connect-adapter.js";

/** The name and port a request was sent to: Host, or :authority over HTTP/2. */
export function requestAuthority(req: NodeRequest): string | undefined {
  return single(req.headers.host) ?? single(req.headers[":authority"]);
}

/**
 * The answer of the browser guards (origin-guard.ts, host-guard.ts): 403 with a Connect
 * error body, so connect-web and curl users read code and message, and gRPC clients map it
 * to PermissionDenied. No CORS header, so a foreign page itself learns nothing. A
 * preflight's answer has no body (`withBody` false): the browser shows none of it.
 */
export function refuseBrowser(res: NodeResponse, message: string, withBody = true): void {
  const body = withBody ? JSON.stringify({ code: "permission_denied", message }) : "";
  res.writeHead(403, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

const single = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
