import type http2 from "node:http2";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type StreamRequest,
  type StreamResponse,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
import {
  contentTypeJson,
  contentTypeProto,
  grpcStatusOk,
  headerAcceptEncoding,
  headerContentType,
  headerEncoding,
  headerGrpcStatus,
  parseTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import type { WritePressure } from "../http/write-pressure.js";
import { errorTrailerObject, nodeHeaders, setErrorTrailers } from "./grpc-response.js";
import { RequestHeaders } from "./request-headers.js";

/** What every gRPC call of the service shares: the app's one pipeline and the wire limits. */
export interface CallPipeline {
  /** The same interceptor array connect-node's router runs (app.ts builds it once). */
  interceptors: Interceptor[];
  /** connect's readMaxBytes. */
  readMaxBytes: number;
  /** Encodings accepted and offered, in connect-node's order (gzip, br). */
  acceptCompression: Compression[];
  /** The call's context values, as the connect adapter gives them (cut signal, pressure). */
  contextValues(
    cut: AbortSignal | undefined,
    pressure: WritePressure | undefined,
    /** The client's address (the TCP peer). */
    peer: string | undefined,
  ): ContextValues;
}

/** One method of the service as the bare-stream path serves it. */
export interface GrpcMethod {
  spec: MethodImplSpec;
  serialization: MethodSerializationLookup<DescMessage, DescMessage>;
  /** Whether the request is protobuf (else JSON: application/grpc+json). */
  binary: boolean;
}

/** The reason a call's signal aborts with when its client reset the stream mid-call. */
const clientGone = () => new ConnectError("the client went away", Code.Canceled);

/** What connect's deadline signal aborts with (protocol/signals.ts), for the same answer. */
const deadlinePassed = () => new ConnectError("the operation timed out", Code.DeadlineExceeded);

/** Aborts a finished call's signal: one shared reason spares an error per call. */
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);

const one = (value: string | string[] | undefined): string | null =>
  value === undefined ? null : Array.isArray(value) ? (value[0] ?? null) : value;

/**
 * One gRPC call on the bare HTTP/2 stream: what connect's createHandlerContext makes for a
 * call (protocol-grpc/handler-factory.ts), made of the request's headers the same way
 * (grpc-timeout, grpc-encoding, grpc-accept-encoding, the response's content type), but with
 * the parts most calls never touch made only when touched:
 * - the AbortSignal: connect makes two AbortControllers per call and links them with
 *   listeners; a Send never looks at its signal. Made on first use, it is aborted at once if
 *   the client has already reset the stream, and from then on when it does; a deadline's timer
 *   makes and aborts it when it fires;
 * - the request headers (request-headers.ts);
 * - the response headers and trailers: until a handler or interceptor asks for them, the
 *   response goes out with fixed header objects (responseHeaderObject, trailerObject).
 * The profile said why: a refused Send spent 11% of its CPU in createHandlerContext, most of
 * it abort signals and Headers (bench:profile, issue #12).
 */
export class GrpcCall {
  readonly values: ContextValues;
  readonly requestHeader: Headers;
  /** grpc-timeout: its error is the refusal connect raises before reading the body. */
  readonly timeout: { timeoutMs?: number | undefined; error?: ConnectError | undefined };
  /** grpc-encoding negotiated; its error is likewise raised before the body is read. */
  readonly compression: {
    request: Compression | null;
    response: Compression | null;
    error?: ConnectError | undefined;
  };
  readonly url: string;
  #controller: AbortController | undefined;
  #deadline: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;

  constructor(
    readonly stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    readonly method: GrpcMethod,
    pipeline: CallPipeline,
    values: ContextValues,
  ) {
    this.values = values;
    this.requestHeader = new RequestHeaders(headers) as unknown as Headers;
    this.url = `http://${headers[":authority"] ?? ""}${headers[":path"] ?? ""}`;
    this.timeout = parseTimeout(one(headers["grpc-timeout"]), Number.MAX_SAFE_INTEGER);
    this.compression = compressionNegotiate(
      pipeline.acceptCompression,
      one(headers["grpc-encoding"]),
      one(headers["grpc-accept-encoding"]),
      headerAcceptEncoding,
    );
    const timeoutMs = this.timeout.timeoutMs;
    if (timeoutMs !== undefined) {
      this.#deadline = Date.now() + timeoutMs;
      if (timeoutMs <= 0) this.abort(deadlinePassed());
      else this.#timer = setTimeout(() => this.abort(deadlinePassed()), timeoutMs);
    }
  }

  /** The call's signal (HandlerContext.signal), made on first use. */
  get signal(): AbortSignal {
    return this.#abortController().signal;
  }

  /** Aborts the call's signal (a deadline, the client gone); the first reason stays. */
  abort(reason: unknown): void {
    const controller = this.#abortController();
    if (!controller.signal.aborted) controller.abort(reason);
  }

  /** The call is over: its deadline timer stops, a signal someone holds aborts. */
  end(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#controller?.abort(CALL_ENDED);
  }

  /** Remaining time before the deadline (HandlerContext.timeoutMs). */
  timeoutMs(): number | undefined {
    return this.#deadline === undefined ? undefined : this.#deadline - Date.now();
  }

  get responseHeader(): Headers {
    if (this.#responseHeader === undefined) {
      this.#responseHeader = new Headers(this.#fixedHeader());
    }
    return this.#responseHeader;
  }

  get responseTrailer(): Headers {
    this.#responseTrailer ??= new Headers({ [headerGrpcStatus]: grpcStatusOk });
    return this.#responseTrailer;
  }

  /** The response headers for Node (without :status), fixed ones if nobody touched them. */
  responseHeaderObject(): http2.OutgoingHttpHeaders {
    return this.#responseHeader ? nodeHeaders(this.#responseHeader) : this.#fixedHeader();
  }

  /**
   * The trailers for Node, as connect's gRPC handler ends a call: setTrailerStatus with the
   * call's error (`failed`), or OK, on top of what a handler or interceptor put there.
   */
  trailerObject(failed?: { error: unknown }): http2.OutgoingHttpHeaders {
    if (failed) {
      if (this.#responseTrailer === undefined) return errorTrailerObject(failed.error);
      setErrorTrailers(this.#responseTrailer, failed.error);
      return nodeHeaders(this.#responseTrailer);
    }
    if (this.#responseTrailer === undefined) return OK_TRAILERS;
    return nodeHeaders(setTrailerStatus(this.#responseTrailer, undefined));
  }

  /** The request the interceptors see for a unary call (connect's, with a lazy signal). */
  unaryRequest(message: AnyMessage): UnaryRequest<DescMessage, DescMessage> {
    return this.#request(false, message) as UnaryRequest<DescMessage, DescMessage>;
  }

  /** The request for a server-streaming call: `input` yields the one request message. */
  streamRequest(input: AsyncIterable<AnyMessage>): StreamRequest<DescMessage, DescMessage> {
    return this.#request(true, input) as StreamRequest<DescMessage, DescMessage>;
  }

  /** The implementation's answer as the interceptors see it; headers and trailers the call's. */
  unaryResponse(message: AnyMessage): UnaryResponse<DescMessage, DescMessage> {
    return this.#response(false, message) as UnaryResponse<DescMessage, DescMessage>;
  }

  streamResponse(messages: AsyncIterable<AnyMessage>): StreamResponse<DescMessage, DescMessage> {
    return this.#response(true, messages) as StreamResponse<DescMessage, DescMessage>;
  }

  /**
   * The HandlerContext the method's implementation gets, as connect's mergeRequest makes it
   * from the call and the request the interceptors passed on (its signal is the request's);
   * the signal and the response headers stay lazy (see OBJECTS below).
   */
  handlerContext(req: {
    service: HandlerContext["service"];
    header: Headers;
    contextValues: ContextValues;
    readonly signal: AbortSignal;
  }): HandlerContext {
    const ctx = {
      [CALL]: this,
      [REQUEST]: req,
      method: this.method.spec.method,
      service: req.service,
      requestMethod: "POST",
      protocolName: "grpc",
      url: this.url,
      requestHeader: req.header,
      values: req.contextValues,
      timeoutMs: this.#deadline === undefined ? noTimeout : () => this.timeoutMs(),
    };
    return Object.defineProperties(ctx, CONTEXT_ACCESSORS) as unknown as HandlerContext;
  }

  /**
   * Takes the headers of the response the interceptors returned, when one of them replaced
   * them (connect's copyHeaders); the call's own response needs nothing. A stream's are taken
   * before its first message is written, its trailers (adoptTrailer) after the last.
   */
  adoptHeader(res: { header: Headers }): void {
    if (!this.#keepsOwn(res, "header")) copyHeaders(res.header, this.responseHeader);
  }

  adoptTrailer(res: { trailer: Headers }): void {
    if (!this.#keepsOwn(res, "trailer")) copyHeaders(res.trailer, this.responseTrailer);
  }

  /**
   * Whether `res` still has the call's own lazy `key`: the call's response, or one an
   * interceptor made from it without touching `key` (observeResponse copies accessors).
   */
  #keepsOwn(res: object, key: "header" | "trailer"): boolean {
    const lazy = key === "header" ? responseHeaderOfCall : responseTrailerOfCall;
    return (
      Object.getOwnPropertyDescriptor(res, key)?.get === lazy &&
      (res as { [CALL]?: GrpcCall })[CALL] === this
    );
  }

  #request(stream: boolean, message: unknown): object {
    const spec = this.method.spec;
    const req = {
      [CALL]: this,
      stream,
      message,
      method: spec.method,
      service: spec.method.parent,
      requestMethod: "POST",
      url: this.url,
      header: this.requestHeader,
      contextValues: this.values,
    };
    return Object.defineProperty(req, "signal", SIGNAL_OF_CALL);
  }

  #response(stream: boolean, message: unknown): object {
    const spec = this.method.spec;
    const res = { [CALL]: this, stream, message, method: spec.method, service: spec.method.parent };
    return Object.defineProperties(res, RESPONSE_ACCESSORS);
  }

  #abortController(): AbortController {
    let controller = this.#controller;
    if (controller === undefined) {
      controller = new AbortController();
      this.#controller = controller;
      // Made after the client reset the stream: aborted at once, as it would have been.
      if (this.stream.closed || this.stream.destroyed) controller.abort(clientGone());
      else this.stream.once("close", () => this.abort(clientGone()));
    }
    return controller;
  }

  #fixedHeader(): Readonly<Record<string, string>> {
    const response = this.compression.response;
    if (response) {
      return {
        [headerContentType]: this.method.binary ? contentTypeProto : contentTypeJson,
        [headerEncoding]: response.name,
      };
    }
    return this.method.binary ? PROTO_HEADER : JSON_HEADER;
  }
}

// Node copies header objects it is given (respond, sendTrailers), so these are shared.
const PROTO_HEADER = Object.freeze({ [headerContentType]: contentTypeProto });
const JSON_HEADER = Object.freeze({ [headerContentType]: contentTypeJson });
const OK_TRAILERS = Object.freeze({ [headerGrpcStatus]: grpcStatusOk.toString() });

/** A message of any of the service's methods, as the bare-stream path handles them. */
export type AnyMessage = MessageShape<DescMessage>;

/** Where a request built by GrpcCall keeps its call, for the chain's innermost step. */
const CALL = Symbol("team.grpcCall");
/** Where a handler context keeps the request whose signal it gives. */
const REQUEST = Symbol("team.grpcRequest");

/*
 * OBJECTS. The request, response and handler context of a call are plain objects whose lazy
 * parts are accessors defined on each object, with getters shared by every call (they find
 * their call through the CALL key). Not object literals with `get x() {}`: V8 makes those in
 * dictionary mode, ~300 bytes of property dictionary each, and an idle stream keeps its
 * request, response and context for hours (measured with heap snapshots of 1,000 idle
 * Subscribe streams: 24.5 KB of heap each with literals, the most of it in dictionaries).
 * Accessors, not prototype getters, so that a spread ({ ...req }) still copies them.
 */
interface OfCall {
  [CALL]: GrpcCall;
  [REQUEST]: { readonly signal: AbortSignal };
}
function signalOfCall(this: OfCall) {
  return this[CALL].signal;
}
function signalOfRequest(this: OfCall) {
  return this[REQUEST].signal;
}
function responseHeaderOfCall(this: OfCall) {
  return this[CALL].responseHeader;
}
function responseTrailerOfCall(this: OfCall) {
  return this[CALL].responseTrailer;
}
const accessor = (get: () => unknown): PropertyDescriptor => ({
  get,
  enumerable: true,
  configurable: true,
});
const SIGNAL_OF_CALL = accessor(signalOfCall);
const RESPONSE_ACCESSORS = {
  header: accessor(responseHeaderOfCall),
  trailer: accessor(responseTrailerOfCall),
};
const CONTEXT_ACCESSORS = {
  signal: accessor(signalOfRequest),
  responseHeader: accessor(responseHeaderOfCall),
  responseTrailer: accessor(responseTrailerOfCall),
};
const noTimeout = () => undefined;

/** The call a request of the bare-stream path belongs to (GrpcCall made the request). */
export function callOf(req: object): GrpcCall {
  const call = (req as { [CALL]?: GrpcCall })[CALL];
  if (call === undefined) throw new Error("a request of the gRPC bare-stream path lost its call");
  return call;
}

/**
 * Wraps `next` in the interceptors, the first outermost, as connect's applyInterceptors
 * (interceptor.ts) does; done once per method (see unaryChain).
 */
export function applyInterceptors<T>(next: T, interceptors: Interceptor[]): T {
  let wrapped = next as unknown as Parameters<Interceptor>[0];
  for (let i = interceptors.length - 1; i >= 0; i--) {
    wrapped = (interceptors[i] as Interceptor)(wrapped);
  }
  return wrapped as unknown as T;
}

/** connect's copyHeaders (protocol/invoke-implementation.ts): `to` becomes `from`. */
function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => {
    to.set(key, value);
  });
}
