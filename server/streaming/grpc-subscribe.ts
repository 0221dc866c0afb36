import type http2 from "node:http2";
import { gunzipSync } from "node:zlib";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  contentTypeProto,
  parseTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import {
  SubscribeRequestSchema,
  SubscribeResponseSchema,
  TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { Deliveries } from "../handlers/subscribe.js";
import { finishUnreadStreamBody } from "../http/oversized-request-bodies.js";
import { createWritePressure } from "../http/write-pressure.js";
import { authenticate, bearerToken } from "../interceptors/auth.js";
import type { AuthThrottle } from "../interceptors/auth-throttle.js";
import type { CallerCache } from "../interceptors/caller-cache.js";
import { reportCallError } from "../interceptors/error-mapping.js";
import { observeCallEnd } from "../interceptors/metrics-interceptor.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Database } from "../store/database.js";

export const GRPC_SUBSCRIBE_PATH = `/${TeamService.typeName}/${TeamService.method.subscribe.name}`;
const METHOD = `${TeamService.typeName}/${TeamService.method.subscribe.name}`;
const METHOD_NAME = TeamService.method.subscribe.name;
/** A SubscribeRequest is a few bytes; anything near this is not one. */
const MAX_REQUEST_BYTES = 64 * 1024;

/**
 * Whether this HTTP/2 stream is a gRPC Subscribe (binary protobuf, no compression or gzip)
 * that the fast path serves. Everything else (Connect, gRPC-Web, gRPC with JSON or another
 * compression) goes to connect-node as before.
 */
export function isGrpcSubscribe(headers: http2.IncomingHttpHeaders): boolean {
  if (headers[":method"] !== "POST" || headers[":path"] !== GRPC_SUBSCRIBE_PATH) return false;
  const type = headers["content-type"];
  const encoding = headers["grpc-encoding"];
  return (
    (type === "application/grpc" || type === "application/grpc+proto") &&
    (encoding === undefined || encoding === "identity" || encoding === "gzip")
  );
}

export interface GrpcSubscribeDeps {
  db: Database;
  cache: CallerCache;
  throttle?: AuthThrottle | undefined;
  touch: (memberId: number) => void;
  deliveries: Deliveries;
  logger: Logger;
  metrics?: Metrics | undefined;
}

/**
 * Subscribe over gRPC, served on the bare HTTP/2 stream: without connect-node's generic
 * streaming pipeline and without Node's compatibility objects (req/res). An idle
 * subscription is the server's commonest state (one per agent, open for hours): through
 * connect-node each one held about 34 KB of heap in its chain of stream transforms, and
 * Node's compatibility objects another ~3 KB (measured, bench/ memory scenario). Here the
 * same delivery loop (handlers/subscribe.ts) writes gRPC frames directly: a 5-byte prefix
 * and the protobuf message, then the status in the trailers, errors encoded by connect's own
 * gRPC helpers, so clients see exactly what connect-node would send.
 *
 * It is the one gRPC call not run through the app's interceptor array (grpc-calls.ts serves
 * the others that way). Through it (grpc-server-stream.ts) an idle stream held 20.6 KB of
 * heap instead of 10.5 KB; made leaner (no dictionary-mode objects, no generator per
 * interceptor), it holds 12.0 KB against 10.5 KB, but the server's RSS after GC at 10,000
 * idle streams was 22.0-24.8 KB per stream against 17.1-18.2 KB here (V8 kept ~70 MB more
 * heap committed; bench memory scenario, same machine, same hour). The target is
 * 20 KB (docs/architecture.md, One call pipeline). So it does by hand what
 * the interceptors would (authenticate, reportCallError, observeCallEnd; the send rate and
 * the journal concern unary calls, and a stream's rules are checked by its handler, on
 * both paths), and test/wire/call-pipeline.test.ts compares
 * its answers with connect-node's like every other method's.
 */
export async function serveGrpcSubscribe(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  cut: AbortSignal | undefined,
  deps: GrpcSubscribeDeps,
): Promise<void> {
  const call = new AbortController();
  const onClose = () => call.abort();
  stream.once("close", onClose);
  let deadline: NodeJS.Timeout | undefined;
  let headersSent = false;
  const sendHeaders = () => {
    if (headersSent) return;
    headersSent = true;
    stream.respond(
      // What connect's gRPC handler answers for protobuf, whatever the request said.
      { ":status": 200, "content-type": contentTypeProto },
      { waitForTrailers: true },
    );
  };
  try {
    const timeout = parseTimeout(headerValue(headers, "grpc-timeout") ?? null, 2 ** 31 - 1);
    if (timeout.error) throw timeout.error;
    if (timeout.timeoutMs !== undefined) {
      deadline = setTimeout(() => call.abort(deadlineExceeded()), timeout.timeoutMs);
    }
    const request = await readRequest(stream, headers, call.signal);
    const caller = await authenticate(
      deps,
      bearerToken(headerValue(headers, "authorization")),
      stream.session?.socket?.remoteAddress,
    );
    deps.touch(caller.id);
    sendHeaders();
    const pressure = createWritePressure();
    const messages = deps.deliveries(caller, request, { call: call.signal, cut, pressure });
    for await (const message of messages) {
      if (call.signal.aborted) break;
      if (!stream.write(frame(toBinary(SubscribeResponseSchema, message)))) {
        // The stream did not take it at once: the page read behind it is let go now, and
        // the next one read only once the client reads again.
        pressure.blocked();
        await drained(stream, call.signal);
      }
    }
    if (call.signal.reason instanceof ConnectError) throw call.signal.reason;
    if (deps.metrics) {
      const gone = call.signal.aborted
        ? new ConnectError("the client went away", Code.Canceled)
        : undefined;
      observeCallEnd(deps.metrics, METHOD_NAME, gone);
    }
    end(stream, sendHeaders, undefined);
  } catch (err) {
    const aborted = call.signal.aborted && !(call.signal.reason instanceof ConnectError);
    const ce = reportCallError(
      deps.logger,
      METHOD,
      call.signal.reason instanceof ConnectError ? call.signal.reason : err,
      aborted,
    );
    if (deps.metrics) observeCallEnd(deps.metrics, METHOD_NAME, ce);
    if (!aborted) end(stream, sendHeaders, ce);
  } finally {
    clearTimeout(deadline);
    stream.off("close", onClose);
  }
}

const headerValue = (headers: http2.IncomingHttpHeaders, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

function deadlineExceeded(): ConnectError {
  return new ConnectError("the deadline (grpc-timeout) has passed", Code.DeadlineExceeded);
}

/**
 * Ends the response with its status in the trailers (after headers, with or without
 * messages); a request left unread (refused early) is then read and dropped.
 */
function end(
  stream: http2.ServerHttp2Stream,
  sendHeaders: () => void,
  error: ConnectError | undefined,
): void {
  if (stream.closed || stream.destroyed || stream.writableEnded) return;
  const trailers: Record<string, string> = {};
  setTrailerStatus(new Headers(), error).forEach((value, key) => {
    trailers[key] = value;
  });
  try {
    sendHeaders();
    stream.once("wantTrailers", () => {
      try {
        stream.sendTrailers(trailers);
      } catch {
        return; // the stream closed meanwhile (client reset): nobody is left to tell
      }
      finishUnreadStreamBody(stream);
    });
    stream.end();
  } catch {
    // The stream closed between the check and the response (client reset): nothing to send.
  }
}

/** One gRPC length-prefixed message: flag 0 (not compressed), big-endian length, bytes. */
function frame(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + body.byteLength);
  out[0] = 0;
  out.writeUInt32BE(body.byteLength, 1);
  out.set(body, 5);
  return out;
}

/** Waits until the client reads again (or the call ends). */
function drained(stream: http2.ServerHttp2Stream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    stream.once("drain", done);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The one request message: a whole body of exactly one gRPC frame. */
async function readRequest(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  signal: AbortSignal,
) {
  const chunks: Buffer[] = [];
  let size = 0;
  // Stopping early must not destroy the stream: its refusal is still to be sent, and the
  // rest of the body then read and dropped (finishUnreadStreamBody).
  for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > MAX_REQUEST_BYTES + 5) {
      throw new ConnectError(
        `message size is larger than configured readMaxBytes ${MAX_REQUEST_BYTES}`,
        Code.ResourceExhausted,
      );
    }
    chunks.push(chunk);
    if (signal.aborted) break;
  }
  const body = Buffer.concat(chunks);
  if (body.byteLength < 5) {
    throw new ConnectError(
      "protocol error: missing or incomplete request message",
      Code.InvalidArgument,
    );
  }
  const flags = body[0] as number;
  const length = body.readUInt32BE(1);
  if (body.byteLength !== 5 + length) {
    throw new ConnectError(
      body.byteLength < 5 + length
        ? "protocol error: incomplete request message"
        : "protocol error: received extra input message for server-streaming method",
      Code.InvalidArgument,
    );
  }
  let message: Uint8Array = body.subarray(5);
  if (flags & 0b1) {
    if (headers["grpc-encoding"] !== "gzip") {
      throw new ConnectError(
        "received compressed envelope, but no grpc-encoding was sent",
        Code.InvalidArgument,
      );
    }
    try {
      message = gunzipSync(message, { maxOutputLength: MAX_REQUEST_BYTES });
    } catch (err) {
      throw new ConnectError(
        "decompression failed",
        Code.InvalidArgument,
        undefined,
        undefined,
        err,
      );
    }
  } else if (flags !== 0) {
    throw new ConnectError(`protocol error: unknown envelope flags ${flags}`, Code.InvalidArgument);
  }
  try {
    return fromBinary(SubscribeRequestSchema, message);
  } catch (err) {
    throw new ConnectError(
      `parse binary: ${(err as Error).message}`,
      Code.InvalidArgument,
      undefined,
      undefined,
      err,
    );
  }
}
