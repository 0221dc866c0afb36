import type http2 from "node:http2";
import type { DescMessage } from "@bufbuild/protobuf";
import {
  type ContextValues,
  createHandlerContext,
  type Interceptor,
  type MethodImplSpec,
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
  headerEncoding,
  headerGrpcStatus,
  parseTimeout,
} from "@connectrpc/connect/protocol-grpc";
import type { WritePressure } from "../http/write-pressure.js";

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

const one = (value: string | string[] | undefined): string | null =>
  value === undefined ? null : Array.isArray(value) ? (value[0] ?? null) : value;

/**
 * A gRPC call's handler context, made from its request headers as connect's gRPC handler
 * makes it (protocol-grpc/handler-factory.ts): connect's createHandlerContext with the
 * caller's headers (pseudo-headers left out, as connect-node does; handed over as pairs, so
 * the call's one WHATWG Headers is made once), grpc-timeout, the response's content type
 * and, when one is negotiated, its grpc-encoding. `timeout.error` and `compression.error`
 * are the refusals connect raises before it reads the body.
 */
export function createCallContext(
  headers: http2.IncomingHttpHeaders,
  method: GrpcMethod,
  pipeline: CallPipeline,
  values: ContextValues,
) {
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
  const { spec, binary } = method;
  const context = createHandlerContext({
    service: spec.method.parent,
    method: spec.method,
    requestMethod: "POST",
    protocolName: "grpc",
    ...(timeout.timeoutMs === undefined ? {} : { timeoutMs: timeout.timeoutMs }),
    requestHeader,
    url: `http://${headers[":authority"] ?? ""}${headers[":path"] ?? ""}`,
    responseHeader: { "content-type": binary ? contentTypeProto : contentTypeJson },
    responseTrailer: { [headerGrpcStatus]: grpcStatusOk },
    contextValues: values,
  });
  if (compression.response) context.responseHeader.set(headerEncoding, compression.response.name);
  return { context, timeout, compression };
}
