import type http2 from "node:http2";
import type { ContextValues, HandlerContext } from "@connectrpc/connect";
import type { GrpcCall } from "./grpc-call.js";

/*
 * The request, response and handler context of a call are plain objects whose lazy parts
 * (the signal, the response headers and trailers) are accessors defined on each object, with
 * getters shared by every call: they find their call through the CALL key. Not object
 * literals with `get x() {}`: V8 makes those in dictionary mode, a property dictionary each,
 * and an idle stream keeps its request, response and context for as long as it is open
 * (`npm run bench:heap` names such dictionaries by their owner). Accessors, not prototype
 * getters, so that a spread ({ ...req }) still copies them.
 */

/** Where a request built for a GrpcCall keeps its call, for the chain's innermost step. */
const CALL = Symbol("team.grpcCall");
/** Where a handler context keeps the request whose signal it gives. */
const REQUEST = Symbol("team.grpcRequest");
/**
 * Where a request keeps the call's URL (a copy of the request keeps it too): the call does
 * not, since a stream's call outlives its request, and the URL is made of the request's
 * header strings.
 */
const URL = Symbol("team.grpcUrl");

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

/** The request the interceptors see (connect's shape), its signal the call's, made lazily. */
export function requestOf(
  call: GrpcCall,
  stream: boolean,
  message: unknown,
  headers: http2.IncomingHttpHeaders,
  header: Headers,
  contextValues: ContextValues,
): object {
  const spec = call.method.spec;
  const url = `http://${headers[":authority"] ?? ""}${headers[":path"] ?? ""}`;
  const req = {
    [CALL]: call,
    [URL]: url,
    stream,
    message,
    method: spec.method,
    service: spec.method.parent,
    requestMethod: "POST",
    url,
    header,
    contextValues,
  };
  return Object.defineProperty(req, "signal", SIGNAL_OF_CALL);
}

/** The implementation's answer as the interceptors see it; headers and trailers the call's. */
export function responseOf(call: GrpcCall, stream: boolean, message: unknown): object {
  const spec = call.method.spec;
  const res = { [CALL]: call, stream, message, method: spec.method, service: spec.method.parent };
  return Object.defineProperties(res, RESPONSE_ACCESSORS);
}

/**
 * The HandlerContext the method's implementation gets, as connect's mergeRequest makes it
 * from the call and the request the interceptors passed on (its signal is the request's);
 * the signal and the response headers stay lazy.
 */
export function handlerContextOf(
  call: GrpcCall,
  req: {
    service: HandlerContext["service"];
    header: Headers;
    contextValues: ContextValues;
    readonly signal: AbortSignal;
    url: string;
    [URL]?: string;
  },
): HandlerContext {
  const ctx = {
    [CALL]: call,
    [REQUEST]: req,
    method: call.method.spec.method,
    service: req.service,
    requestMethod: "POST",
    protocolName: "grpc",
    // The call's URL, as connect's context has it, whatever an interceptor made of req.url.
    url: req[URL] ?? req.url,
    requestHeader: req.header,
    values: req.contextValues,
    timeoutMs: call.deadlineAt === undefined ? noTimeout : () => call.timeoutMs(),
  };
  return Object.defineProperties(ctx, CONTEXT_ACCESSORS) as unknown as HandlerContext;
}

/**
 * Whether `res` still has `call`'s own lazy `key`: the call's response, or one an interceptor
 * made from it without touching `key` (observeResponse copies accessors).
 */
export function keepsOwn(call: GrpcCall, res: object, key: "header" | "trailer"): boolean {
  const lazy = key === "header" ? responseHeaderOfCall : responseTrailerOfCall;
  return (
    Object.getOwnPropertyDescriptor(res, key)?.get === lazy &&
    (res as { [CALL]?: GrpcCall })[CALL] === call
  );
}

/** The call a request of the bare-stream path belongs to (requestOf made the request). */
export function callOf(req: object): GrpcCall {
  const call = (req as { [CALL]?: GrpcCall })[CALL];
  if (call === undefined) throw new Error("a request of the gRPC bare-stream path lost its call");
  return call;
}
