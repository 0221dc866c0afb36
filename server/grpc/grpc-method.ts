import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { MethodImplSpec } from "@connectrpc/connect";
import type { MethodSerializationLookup } from "./connect-internals.js";

/** One method of the service as the bare-stream path serves it. */
export interface GrpcMethod {
  spec: MethodImplSpec;
  serialization: MethodSerializationLookup<DescMessage, DescMessage>;
  /** Whether the request is protobuf (else JSON: application/grpc+json). */
  binary: boolean;
}

/** A message of any of the service's methods, as the bare-stream path handles them. */
export type AnyMessage = MessageShape<DescMessage>;
