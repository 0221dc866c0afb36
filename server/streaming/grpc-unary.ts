import type http2 from "node:http2";
import type { DescMessage } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createHandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  invokeUnaryImplementation,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
import {
  contentTypeJson,
  contentTypeProto,
  grpcStatusOk,
  headerAcceptEncoding,
  headerEncoding,
  headerGrpcStatus,
  parseTimeout,
} from "@connectrpc/connect/protocol-grpc";
import type { WritePressure } from "../http/write-pressure.js";
import { readOneMessage } from "./grpc-request.js";
import { endResponse, envelopeOf, setErrorTrailers } from "./grpc-response.js";

/** What every gRPC call of the service shares: the app's one pipeline and the wire limits. */
export interface CallPipeline {
  /** The same interceptor array connect-node's router runs (app.ts builds it once). */
  interceptors: Interceptor[];
  /** connect's readMaxBytes. */
  readMaxBytes: number;
  /** Encodings accepted and offered, in connect-node's order (gzip, br). */
  acceptCompression: Compression[];
  /** The call's context values, as the connect adapter gives them (cut signal, pressure). */
  contextValues(cut: AbortSignal | undefined, pressure: WritePressure | undefined): ContextValues;
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

const one = (value: string | string[] | undefined): string | null =>
  value === undefined ? null : Array.isArray(value) ? (value[0] ?? null) : value;

/**
 * The parts of a gRPC call connect's handler derives from its request headers. The header
 * list is handed to createHandlerContext as pairs (it makes the one WHATWG Headers of the
 * call from them), pseudo-headers left out as connect-node does.
 */
export function callHeaders(headers: http2.IncomingHttpHeaders, pipeline: CallPipeline) {
  const requestHeader: [string, string][] = [];
  for (const key in headers) {
    if (key.charCodeAt(0) === 58 /* ":" */) continue;
    const value = headers[key];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) requestHeader.push([key, v]);
    else requestHeader.push([key, String(value)]);
  }
  const timeout = parseTimeout(one(headers["grpc-timeout"]), Number.MAX_SAFE_INTEGER);
  const compression = compressionNegotiate(
    pipeline.acceptCompression,
    one(headers["grpc-encoding"]),
    one(headers["grpc-accept-encoding"]),
    headerAcceptEncoding,
  );
  const url = `http://${headers[":authority"] ?? ""}${headers[":path"] ?? ""}`;
  return { requestHeader, timeout, compression, url };
}

/**
 * One unary gRPC call on the bare HTTP/2 stream, through the same steps as connect's gRPC
 * handler (protocol-grpc/handler-factory.ts): the handler context from the request headers
 * (grpc-timeout, grpc-encoding, grpc-accept-encoding), the one request message, then
 * connect's own invokeUnaryImplementation with the app's interceptor array around the
 * method's implementation, and the response written with connect's envelope and trailer
 * helpers. What is left out is connect-node's generic machinery: the async-iterable pipe of
 * generators, the request's AbortController (its abort made a DOMException at every call's
 * end) and Node's compatibility objects.
 */
export async function serveUnary(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  cut: AbortSignal | undefined,
  method: GrpcMethod,
  pipeline: CallPipeline,
): Promise<void> {
  const { spec, serialization, binary } = method;
  const { requestHeader, timeout, compression, url } = callHeaders(headers, pipeline);
  const context = createHandlerContext({
    service: spec.method.parent,
    method: spec.method,
    requestMethod: "POST",
    protocolName: "grpc",
    ...(timeout.timeoutMs === undefined ? {} : { timeoutMs: timeout.timeoutMs }),
    requestHeader,
    url,
    responseHeader: { "content-type": binary ? contentTypeProto : contentTypeJson },
    responseTrailer: { [headerGrpcStatus]: grpcStatusOk },
    contextValues: pipeline.contextValues(cut, undefined),
  });
  if (compression.response) context.responseHeader.set(headerEncoding, compression.response.name);
  // The client reset the stream before the answer: the handler sees its signal abort.
  const onClose = () => context.abort(clientGone());
  stream.once("close", onClose);
  let last: Uint8Array | undefined;
  try {
    // Refused before the body is read, as connect does (its transformPrepend).
    if (compression.error) throw compression.error;
    if (timeout.error) throw timeout.error;
    const input = await readOneMessage(stream, {
      readMaxBytes: pipeline.readMaxBytes,
      compression: compression.request,
      parse: (data) => serialization.getI(binary).parse(data),
      kind: "unary",
    });
    const output = await invokeUnaryImplementation(
      spec as MethodImplSpec & { kind: "unary" },
      context,
      input,
      pipeline.interceptors,
    );
    last = await envelopeOf(serialization.getO(binary).serialize(output), compression.response);
  } catch (err) {
    setErrorTrailers(context.responseTrailer, err);
  } finally {
    stream.off("close", onClose);
  }
  endResponse(stream, context.responseHeader, last, context.responseTrailer);
  // Ends the deadline's timer, if any; the shared reason spares a DOMException per call.
  if (timeout.timeoutMs !== undefined) context.abort(CALL_ENDED);
}

const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);
