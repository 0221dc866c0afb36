import type http from "node:http";
import type http2 from "node:http2";

type Response = http.ServerResponse | http2.Http2ServerResponse;
type Headers = Record<string, unknown>;

/**
 * Request bodies that cannot be decoded are the client's fault, but connect-es reports them
 * as Internal before any interceptor of ours runs (a protobuf that does not parse, a
 * compressed frame without an encoding, a body that does not decompress). Internal means
 * "our bug" to a client and to our alerts, so these answers are rewritten to
 * InvalidArgument on their way out: gRPC status in headers or trailers, and the Connect
 * protocol's unary JSON error body.
 */
const UNDECODABLE =
  /^(parse binary: |received compressed envelope, but do not know how to decompress$|decompression failed$)/;

const GRPC_INTERNAL = "13";
const GRPC_INVALID_ARGUMENT = "3";

export function reportParseErrorsAsInvalidArgument(res: Response): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  let held: { args: unknown[]; chunks: Buffer[] } | undefined;
  let grpcWeb = false;
  let connectStream = false;

  (res as { writeHead: (...args: unknown[]) => Response }).writeHead = (...args: unknown[]) => {
    // connect-node calls writeHead again when headersSent is still false: keep the first.
    if (held) return res;
    const headers = args.find((a): a is Headers => !!a && typeof a === "object");
    if (headers) rewriteGrpc(headers);
    grpcWeb = /^application\/grpc-web/.test(String(headers?.["content-type"] ?? ""));
    connectStream = /^application\/connect\+/.test(String(headers?.["content-type"] ?? ""));
    // A Connect unary error: hold it until its body is known.
    if (args[0] === 500 && /^application\/json/.test(String(headers?.["content-type"] ?? ""))) {
      held = { args, chunks: [] };
      return res;
    }
    return writeHead(...args);
  };
  (res as { write: (...args: unknown[]) => boolean }).write = (
    chunk: unknown,
    ...rest: unknown[]
  ) => {
    if (grpcWeb) return write(rewriteGrpcWebTrailer(chunk as Uint8Array), ...rest);
    if (connectStream) return write(rewriteConnectEndStream(chunk as Uint8Array), ...rest);
    if (!held) return write(chunk, ...rest);
    held.chunks.push(Buffer.from(chunk as Uint8Array));
    return true;
  };
  (res as { end: (...args: unknown[]) => Response }).end = (...args: unknown[]) => {
    if (!held) return end(...args);
    if (args[0] && typeof args[0] !== "function")
      held.chunks.push(Buffer.from(args[0] as Uint8Array));
    let body = Buffer.concat(held.chunks);
    const [, ...headArgs] = held.args;
    let status = 500;
    try {
      const error = JSON.parse(body.toString("utf8")) as { code?: string; message?: string };
      if (error.code === "internal" && UNDECODABLE.test(error.message ?? "")) {
        status = 400;
        body = Buffer.from(JSON.stringify({ ...error, code: "invalid_argument" }));
      }
    } catch {
      // not an error body we know: pass it on as it is
    }
    const headers = headArgs.find((a): a is Headers => !!a && typeof a === "object");
    if (headers && "content-length" in headers) headers["content-length"] = String(body.length);
    held = undefined;
    writeHead(status, ...headArgs);
    return end(body);
  };
  const addTrailers = res.addTrailers.bind(res) as (headers: Headers) => void;
  (res as { addTrailers: (headers: Headers) => void }).addTrailers = (headers: Headers) => {
    rewriteGrpc(headers);
    addTrailers(headers);
  };
}

// Connect streams end with a frame flagged 0x02 holding {"error": {...}} as JSON.
function rewriteConnectEndStream(chunk: Uint8Array): Uint8Array {
  if (chunk.length < 5 || ((chunk[0] ?? 0) & 0x02) === 0 || ((chunk[0] ?? 0) & 0x01) !== 0) {
    return chunk;
  }
  try {
    const end = JSON.parse(Buffer.from(chunk.subarray(5)).toString("utf8")) as {
      error?: { code?: string; message?: string };
    };
    if (end.error?.code !== "internal" || !UNDECODABLE.test(end.error.message ?? "")) return chunk;
    const body = Buffer.from(
      JSON.stringify({ ...end, error: { ...end.error, code: "invalid_argument" } }),
    );
    const frame = Buffer.alloc(5 + body.length);
    frame[0] = chunk[0] ?? 0x02;
    frame.writeUInt32BE(body.length, 1);
    body.copy(frame, 5);
    return frame;
  } catch {
    return chunk;
  }
}

// gRPC-Web sends its trailers in the body, as a frame flagged 0x80 holding header lines.
function rewriteGrpcWebTrailer(chunk: Uint8Array): Uint8Array {
  if (chunk.length < 5 || chunk[0] !== 0x80) return chunk;
  const text = Buffer.from(chunk.subarray(5)).toString("latin1");
  const status = /^grpc-status:\s*(\d+)\r?$/im.exec(text)?.[1];
  const message = /^grpc-message:\s*(.*?)\r?$/im.exec(text)?.[1] ?? "";
  if (status !== GRPC_INTERNAL || !UNDECODABLE.test(decodeURIComponent(message))) return chunk;
  const body = Buffer.from(
    text.replace(/^grpc-status:\s*\d+/im, `grpc-status: ${GRPC_INVALID_ARGUMENT}`),
    "latin1",
  );
  const frame = Buffer.alloc(5 + body.length);
  frame[0] = 0x80;
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

function rewriteGrpc(headers: Headers): void {
  if (headers["grpc-status"] !== GRPC_INTERNAL) return;
  const message = decodeURIComponent(String(headers["grpc-message"] ?? ""));
  if (UNDECODABLE.test(message)) headers["grpc-status"] = GRPC_INVALID_ARGUMENT;
}
