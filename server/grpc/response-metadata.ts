import type http2 from "node:http2";
import {
  type Compression,
  contentTypeJson,
  contentTypeProto,
  grpcStatusOk,
  headerContentType,
  headerEncoding,
  headerGrpcStatus,
} from "./connect-internals.js";

// Node copies header objects it is given (respond, sendTrailers), so these are shared.
const PROTO_HEADER = Object.freeze({ [headerContentType]: contentTypeProto });
const JSON_HEADER = Object.freeze({ [headerContentType]: contentTypeJson });
/** The trailers of a call that ended well and whose trailers nobody touched. */
export const OK_TRAILERS: http2.OutgoingHttpHeaders = Object.freeze({
  [headerGrpcStatus]: grpcStatusOk.toString(),
});

/**
 * The response headers connect's gRPC handler sends when no handler or interceptor set any:
 * the content type of the request's serialization and the negotiated encoding. Without an
 * encoding, one shared object, not one per call.
 */
export function fixedResponseHeader(
  binary: boolean,
  compression: Compression | null,
): Readonly<Record<string, string>> {
  if (compression) {
    return {
      [headerContentType]: binary ? contentTypeProto : contentTypeJson,
      [headerEncoding]: compression.name,
    };
  }
  return binary ? PROTO_HEADER : JSON_HEADER;
}

/** connect's copyHeaders (protocol/invoke-implementation.ts): `to` becomes `from`. */
export function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => {
    to.set(key, value);
  });
}
