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
  return guardWrites(stream, limitMs, resetStream, onCut);
}

/** Shared by every bare stream (not a closure each). */
function resetStream(out: Out): void {
  (out as http2.ServerHttp2Stream).close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
}

type Out = Response | http2.ServerHttp2Stream;
type Write = (chunk: Uint8Array, ...rest: unknown[]) => boolean;

/** Where a guarded response keeps its guard, for the listeners every response shares. */
const GUARD = Symbol("team.writeGuard");

/** Watches `out`'s writes; returns the signal that aborts when `reset` cut it. */
function guardWrites(
  out: Out,
  limitMs: number,
  reset: (out: Out) => void,
  onCut: (stalledMs: number) => void,
  pressure?: WritePressureSource,
): AbortSignal {
  const guard = new WriteGuard(out, out.write as Write, limitMs, reset, onCut, pressure);
  (out as Out & { [GUARD]?: WriteGuard })[GUARD] = guard;
  // The handler writes through write(): each write is where a stall shows.
  (out as { write: Write }).write = (chunk, ...rest) => guard.write(chunk, rest);
  out.on("drain", onDrain);
  // `on`: 'close' comes once, and once() would wrap the listener in two more objects.
  out.on("close", onClose);
  return guard.cut.signal;
}

function guardOf(out: unknown): WriteGuard {
  return (out as { [GUARD]: WriteGuard })[GUARD];
}

/** Shared by every guarded response: an emitter calls its listeners with itself as `this`. */
function onDrain(this: Out): void {
  const guard = guardOf(this);
  guard.flushedLast = true;
  guard.clear();
}

function onClose(this: Out): void {
  const guard = guardOf(this);
  guard.closed = true;
  guard.clear();
}

function onTimer(guard: WriteGuard): void {
  guard.check();
}

/**
 * One response's watch on its writes. A class with shared listeners, not a set of closures
 * per response: every open stream has one, and an idle subscription keeps it for hours.
 */
class WriteGuard {
  readonly cut = new AbortController();
  timer: NodeJS.Timeout | undefined;
  since = 0;
  flushedLast = true;
  // A stream the client reset is closed, and a write to it returns false like a full
  // buffer: no timer for that, or every rapidly reset call would log a cut 30 s later.
  closed = false;

  constructor(
    private readonly out: Out,
    /** The response's own write(), called with the response as `this`. */
    private readonly original: Write,
    private readonly limitMs: number,
    private readonly reset: (out: Out) => void,
    private readonly onCut: (stalledMs: number) => void,
    private readonly pressure: WritePressureSource | undefined,
  ) {}

  write(chunk: Uint8Array, rest: unknown[]): boolean {
    const out = this.out;
    const flushed = this.original.call(out, chunk, ...rest);
    this.flushedLast = flushed;
    // false: the buffer is full (over HTTP/2 also when the client's flow-control window
    // is used up) and the writer now waits for 'drain'.
    if (!flushed && !this.closed && !out.destroyed) {
      this.pressure?.blocked();
      if (this.timer === undefined) {
        this.since = Date.now();
        this.timer = setTimeout(onTimer, this.limitMs, this);
        this.timer.unref();
      }
    }
    return flushed;
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  check(): void {
    this.timer = undefined;
    if (!this.flushedLast) this.cutNow();
  }

  cutNow(): void {
    this.clear();
    if (this.cut.signal.aborted) return;
    this.onCut(Date.now() - this.since);
    this.cut.abort();
    this.reset(this.out);
  }
}
