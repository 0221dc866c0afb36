/**
 * The parts of connect-es that the bare-stream path uses and connect marks `@private`: not
 * its public API, so a minor release may rename them or change their arguments. Every file of
 * server/grpc/ takes them from here, never from `@connectrpc/connect/protocol*` itself, so an
 * upgrade is checked in one place: test/unit/connect-internals.test.ts fails when the installed
 * version is not CONNECT_VERSION_READ or a function below changed its arity. Read from
 * `@connectrpc/connect` 2.1.2 (`src/protocol/`, `src/protocol-grpc/`); patches/ patches the
 * same version.
 *
 * What each is for here: the same decisions connect's gRPC handler makes, taken by the same
 * code (protocol-grpc/handler-factory.ts), so the answers match connect-node's by construction.
 */
export {
  type Compression,
  /** grpc-encoding / grpc-accept-encoding against the encodings the server accepts. */
  compressionNegotiate,
  /** The request and response (de)serializers of one method, binary and JSON. */
  createMethodSerializationLookup,
  /** One length-prefixed message, compressed when asked and worth it. */
  encodeEnvelope,
  envelopeCompress,
  envelopeDecompress,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
export {
  contentTypeJson,
  contentTypeProto,
  grpcStatusOk,
  headerAcceptEncoding,
  headerContentType,
  headerEncoding,
  headerGrpcStatus,
  /** application/grpc, +proto, +json: which serialization a request asks for. */
  parseContentType,
  /** grpc-timeout, with connect's refusal of a malformed one. */
  parseTimeout,
  /** grpc-status, grpc-message and grpc-status-details-bin from an error (or OK). */
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";

/** The @connectrpc/connect version the exports above were read from. */
export const CONNECT_VERSION_READ = "2.1.2";

/** The functions above and their arity (Function.length) in that version. */
export const CONNECT_FUNCTION_ARITY = {
  compressionNegotiate: 4,
  createMethodSerializationLookup: 4,
  encodeEnvelope: 2,
  envelopeCompress: 3,
  envelopeDecompress: 3,
  parseContentType: 1,
  parseTimeout: 2,
  setTrailerStatus: 2,
} as const;
