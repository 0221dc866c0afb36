import type http2 from "node:http2";
import type { DescMessage } from "@bufbuild/protobuf";
import type {
  ConnectError,
  ContextValues,
  HandlerContext,
  StreamRequest,
  StreamResponse,
  UnaryRequest,
  UnaryResponse,
} from "@connectrpc/connect";
import { CALL_ENDED, clientGone, deadlinePassed } from "./abort-reasons.js";
import { handlerContextOf, keepsOwn, requestOf, responseOf } from "./call-objects.js";
import type { CallPipeline } from "./call-pipeline.js";
import {
  type Compression,
  compressionNegotiate,
  grpcStatusOk,
  headerAcceptEncoding,
  headerGrpcStatus,
  parseTimeout,
  setTrailerStatus,
} from "./connect-internals.js";
import type { AnyMessage, GrpcMethod } from "./grpc-method.js";
import { errorTrailerObject, nodeHeaders, setErrorTrailers } from "./grpc-response.js";
import { RequestHeaders } from "./request-headers.js";
import { copyHeaders, fixedResponseHeader, OK_TRAILERS } from "./response-metadata.js";

/** A call without grpc-timeout, and one without compression: shared, not one per call. */
const NO_TIMEOUT: GrpcCall["timeout"] = Object.freeze({});
const IDENTITY: GrpcCall["compression"] = Object.freeze({ request: null, response: null });

/** Where a stream keeps its call once the call's signal exists, for abortOnClose. */
const CALL_OF_STREAM = Symbol("team.grpcCallOfStream");
type StreamOfCall = http2.ServerHttp2Stream & { [CALL_OF_STREAM]?: GrpcCall };

/** Shared by every call (not a closure each: a stream keeps it for as long as it is open). */
function abortOnClose(this: StreamOfCall): void {
  this[CALL_OF_STREAM]?.abort(clientGone());
}

const requestHeaders = (headers: http2.IncomingHttpHeaders) =>
  new RequestHeaders(headers) as unknown as Headers;

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
 * - the request headers (request-headers.ts), which only the request the interceptors see
 *   keeps (with the context values): a stream's call outlives its request, and an idle
 *   stream would hold Node's header object (a property dictionary) and its strings;
 * - the response headers and trailers: until a handler or interceptor asks for them, the
 *   response goes out with fixed header objects (response-metadata.ts).
 * The request, response and handler context it hands out are call-objects.ts's.
 */
export class GrpcCall {
  /** grpc-timeout: its error is the refusal connect raises before reading the body. */
  readonly timeout: { timeoutMs?: number | undefined; error?: ConnectError | undefined };
  /** grpc-encoding negotiated; its error is likewise raised before the body is read. */
  readonly compression: {
    request: Compression | null;
    response: Compression | null;
    error?: ConnectError | undefined;
  };
  /** When the deadline passes (Date.now() time), if the request set one. */
  readonly deadlineAt: number | undefined;
  #controller: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;

  constructor(
    readonly stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    readonly method: GrpcMethod,
    pipeline: CallPipeline,
  ) {
    const timeout = parseTimeout(one(headers["grpc-timeout"]), Number.MAX_SAFE_INTEGER);
    this.timeout = timeout.timeoutMs === undefined && !timeout.error ? NO_TIMEOUT : timeout;
    const compression = compressionNegotiate(
      pipeline.acceptCompression,
      one(headers["grpc-encoding"]),
      one(headers["grpc-accept-encoding"]),
      headerAcceptEncoding,
    );
    this.compression =
      compression.request === null && compression.response === null && !compression.error
        ? IDENTITY
        : compression;
    const timeoutMs = this.timeout.timeoutMs;
    this.deadlineAt = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    if (timeoutMs !== undefined) {
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
    return this.deadlineAt === undefined ? undefined : this.deadlineAt - Date.now();
  }

  get responseHeader(): Headers {
    this.#responseHeader ??= new Headers(this.#fixedHeader());
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

  /**
   * The request the interceptors see for a unary call (connect's, with a lazy signal), with
   * the request's headers and the call's context values.
   */
  unaryRequest(
    message: AnyMessage,
    headers: http2.IncomingHttpHeaders,
    values: ContextValues,
  ): UnaryRequest<DescMessage, DescMessage> {
    return requestOf(
      this,
      false,
      message,
      headers,
      requestHeaders(headers),
      values,
    ) as UnaryRequest<DescMessage, DescMessage>;
  }

  /** The request for a server-streaming call: `input` yields the one request message. */
  streamRequest(
    input: AsyncIterable<AnyMessage>,
    headers: http2.IncomingHttpHeaders,
    values: ContextValues,
  ): StreamRequest<DescMessage, DescMessage> {
    return requestOf(this, true, input, headers, requestHeaders(headers), values) as StreamRequest<
      DescMessage,
      DescMessage
    >;
  }

  /** The implementation's answer as the interceptors see it; headers and trailers the call's. */
  unaryResponse(message: AnyMessage): UnaryResponse<DescMessage, DescMessage> {
    return responseOf(this, false, message) as UnaryResponse<DescMessage, DescMessage>;
  }

  streamResponse(messages: AsyncIterable<AnyMessage>): StreamResponse<DescMessage, DescMessage> {
    return responseOf(this, true, messages) as StreamResponse<DescMessage, DescMessage>;
  }

  /** The HandlerContext the implementation gets (call-objects.ts). */
  handlerContext(req: Parameters<typeof handlerContextOf>[1]): HandlerContext {
    return handlerContextOf(this, req);
  }

  /**
   * Takes the headers of the response the interceptors returned, when one of them replaced
   * them (connect's copyHeaders); the call's own response needs nothing. A stream's are taken
   * before its first message is written, its trailers (adoptTrailer) after the last.
   */
  adoptHeader(res: { header: Headers }): void {
    if (!keepsOwn(this, res, "header")) copyHeaders(res.header, this.responseHeader);
  }

  adoptTrailer(res: { trailer: Headers }): void {
    if (!keepsOwn(this, res, "trailer")) copyHeaders(res.trailer, this.responseTrailer);
  }

  #abortController(): AbortController {
    let controller = this.#controller;
    if (controller === undefined) {
      controller = new AbortController();
      this.#controller = controller;
      // Made after the client reset the stream: aborted at once, as it would have been.
      if (this.stream.closed || this.stream.destroyed) controller.abort(clientGone());
      else {
        (this.stream as StreamOfCall)[CALL_OF_STREAM] = this;
        // `on`: 'close' comes once, and once() would wrap the listener in two more objects.
        this.stream.on("close", abortOnClose);
      }
    }
    return controller;
  }

  #fixedHeader(): Readonly<Record<string, string>> {
    return fixedResponseHeader(this.method.binary, this.compression.response);
  }
}
