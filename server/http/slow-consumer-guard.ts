import type http from "node:http";
import http2 from "node:http2";
import { createContextKey, createContextValues } from "@connectrpc/connect";
import { peerAddressKey } from "../interceptors/auth-throttle.js";
import {
  createWritePressure,
  type WritePressureSource,
  writePressureKey,
} from "./write-pressure.js";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

// One signal per request, aborted when its response is cut; handlers see it as a context
// value (connect-adapter.ts's contextValues option reads it from here).
const cutSignals = new WeakMap<Request, AbortSignal>();
// And the response's write pressure (write-pressure.ts), seen by the same wrapper of write().
const pressures = new WeakMap<Request, WritePressureSource>();

/** Aborted when the server cut the call's response because its client stopped reading. */
export const responseCutKey = createContextKey<AbortSignal | undefined>(undefined, {
  description: "aborted when a slow consumer's response is cut",
});

/** The adapter's `contextValues` (connect-adapter.ts): hands the request's cut signal and write
 * pressure to handlers. */
export function contextValuesFor(req: Request) {
  return createContextValues()
    .set(responseCutKey, cutSignals.get(req))
    .set(writePressureKey, pressures.get(req))
    .set(peerAddressKey, req.socket?.remoteAddress);
}

/**
 * Ends a response whose client stopped reading, so that a subscriber that never reads
 * cannot make the server hold its inbox in memory. connect-node waits for 'drain' before
 * each write; a response whose write has waited `limitMs` is reset with ENHANCE_YOUR_CALM
 * over HTTP/2 (grpc-js reports RESOURCE_EXHAUSTED "Bandwidth exhausted or memory limit
 * exceeded"; connect-es reports Internal "Stream closed with error code
 * NGHTTP2_ENHANCE_YOUR_CALM", Node's stream error) and its connection closed over HTTP/1.1
 * (connect-es: Aborted "aborted"); test/wire/slow-consumers.test.ts checks each. The
 * request's cut signal aborts, which releases the subscription at once even though the
 * reset only leaves once the network moves again.
 * The client resumes from the last seq it handled; nothing is lost: the inbox is in the
 * database.
 */
export function guardSlowConsumer(
  req: Request,
  res: Response,
  limitMs: number,
  onCut: (stalledMs: number) => void,
): void {
  const reset = () => {
    if ("stream" in res && res.stream) {
      res.stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    } else {
      res.socket?.destroy();
    }
  };
  const pressure = createWritePressure();
  pressures.set(req, pressure);
  cutSignals.set(req, guardWrites(res, limitMs, reset, onCut, pressure));
}

/** The same guard for an HTTP/2 stream served without Node's compatibility objects. */
export function guardSlowStream(
  stream: http2.ServerHttp2Stream,
  limitMs: number,
  onCut: (stalledMs: number) => void,
): AbortSignal {
  return guardWrites(
    stream,
    limitMs,
    () => stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM),
    onCut,
  );
}

/** Watches `out`'s writes; returns the signal that aborts when `reset` cut it. */
function guardWrites(
  out: Response | http2.ServerHttp2Stream,
  limitMs: number,
  reset: () => void,
  onCut: (stalledMs: number) => void,
  pressure?: WritePressureSource,
): AbortSignal {
  const cutController = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let since = 0;
  let flushedLast = true;
  // A stream the client reset is closed, and a write to it returns false like a full
  // buffer: no timer for that, or every rapidly reset call would log a cut 30 s later.
  let closed = false;

  const clear = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const cut = () => {
    clear();
    if (cutController.signal.aborted) return;
    onCut(Date.now() - since);
    cutController.abort();
    reset();
  };
  const check = () => {
    timer = undefined;
    if (!flushedLast) cut();
  };

  const write = out.write.bind(out) as (chunk: Uint8Array, ...rest: unknown[]) => boolean;
  // The handler writes through write(): each write is where a stall shows.
  (out as { write: (chunk: Uint8Array, ...rest: unknown[]) => boolean }).write = (
    chunk,
    ...rest
  ) => {
    const flushed = write(chunk, ...rest);
    flushedLast = flushed;
    // false: the buffer is full (over HTTP/2 also when the client's flow-control window
    // is used up) and the writer now waits for 'drain'.
    if (!flushed && !closed && !out.destroyed) {
      pressure?.blocked();
      if (timer === undefined) {
        since = Date.now();
        timer = setTimeout(check, limitMs);
        timer.unref();
      }
    }
    return flushed;
  };
  out.on("drain", () => {
    flushedLast = true;
    clear();
  });
  out.once("close", () => {
    closed = true;
    clear();
  });
  return cutController.signal;
}
