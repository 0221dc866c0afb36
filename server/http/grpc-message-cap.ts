import type http from "node:http";
import type http2 from "node:http2";

type Response = http.ServerResponse | http2.Http2ServerResponse;
type Headers = Record<string, unknown>;

/** Longest grpc-message sent; a header frame past 16 KiB breaks HTTP/2 and HTTP/1 clients. */
const MAX_GRPC_MESSAGE = 1024;

/**
 * Caps the `grpc-message` header and trailer. A refusal can quote the client's input (a
 * parse error echoes the offending value), and an unbounded header made the HTTP/2 frame
 * too large: the whole connection was destroyed, other calls on it included. The Connect
 * protocol carries errors in the body and is not affected.
 */
export function capGrpcMessage(res: Response): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  (res as { writeHead: (...args: unknown[]) => Response }).writeHead = (...args: unknown[]) => {
    for (const arg of args) if (arg && typeof arg === "object") capIn(arg as Headers);
    return writeHead(...args);
  };
  const addTrailers = res.addTrailers.bind(res) as (headers: Headers) => void;
  (res as { addTrailers: (headers: Headers) => void }).addTrailers = (headers: Headers) => {
    capIn(headers);
    addTrailers(headers);
  };
}

function capIn(headers: Headers): void {
  const value = headers["grpc-message"];
  if (typeof value !== "string" || value.length <= MAX_GRPC_MESSAGE) return;
  // The value is percent-encoded: do not cut through an escape.
  let cut = value.slice(0, MAX_GRPC_MESSAGE);
  const partial = cut.lastIndexOf("%");
  if (partial > cut.length - 3) cut = cut.slice(0, partial);
  headers["grpc-message"] = `${cut}%E2%80%A6 (truncated)`;
}
