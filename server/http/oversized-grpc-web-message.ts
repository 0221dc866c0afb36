import type http from "node:http";
import type http2 from "node:http2";

type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Longest grpc-message sent in a gRPC-Web trailer frame (as in grpc-message-cap.ts). */
const MAX_GRPC_MESSAGE = 1024;

/**
 * Caps `grpc-message` in gRPC-Web's trailer frame, which travels in the body. A parse error
 * quotes the offending JSON value, unbounded: a 900 KB string in a request made a 900 KB
 * error, echoed back to a client that sent garbage. grpc-message-cap.ts does the same for
 * the gRPC header and trailer.
 */
export function capGrpcWebMessage(res: Response): void {
  let grpcWeb = false;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  (res as { writeHead: (...args: unknown[]) => Response }).writeHead = (...args: unknown[]) => {
    const headers = args.find((a): a is Record<string, unknown> => !!a && typeof a === "object");
    grpcWeb = /^application\/grpc-web/.test(String(headers?.["content-type"] ?? ""));
    return writeHead(...args);
  };
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  (res as { write: (chunk: unknown, ...rest: unknown[]) => boolean }).write = (
    chunk: unknown,
    ...rest: unknown[]
  ) => write(grpcWeb ? capTrailerFrame(chunk as Uint8Array) : chunk, ...rest);
}

// connect-node writes each frame with one write; the trailer frame is flagged 0x80 and holds
// header lines.
function capTrailerFrame(chunk: Uint8Array): Uint8Array {
  if (chunk.length < 5 + MAX_GRPC_MESSAGE || chunk[0] !== 0x80) return chunk;
  const frame = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (frame.readUInt32BE(1) !== frame.length - 5) return chunk;
  const text = frame.subarray(5).toString("latin1");
  const lines = text.split("\r\n");
  const i = lines.findIndex((l) => /^grpc-message:/i.test(l));
  const line = lines[i];
  if (line === undefined) return chunk;
  const value = line.slice(line.indexOf(":") + 1).trim();
  if (value.length <= MAX_GRPC_MESSAGE) return chunk;
  // The value is percent-encoded: do not cut through an escape.
  let cut = value.slice(0, MAX_GRPC_MESSAGE);
  const partial = cut.lastIndexOf("%");
  if (partial > cut.length - 3) cut = cut.slice(0, partial);
  lines[i] = `grpc-message: ${cut}%E2%80%A6 (truncated)`;
  const body = Buffer.from(lines.join("\r\n"), "latin1");
  const capped = Buffer.alloc(5 + body.length);
  capped[0] = 0x80;
  capped.writeUInt32BE(body.length, 1);
  body.copy(capped, 5);
  return capped;
}
