import type http2 from "node:http2";
import { create, type DescMessage } from "@bufbuild/protobuf";
import type { Interceptor, MethodImplSpec, UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import { callOf } from "./call-objects.js";
import { applyInterceptors, type CallPipeline } from "./call-pipeline.js";
import { GrpcCall } from "./grpc-call.js";
import type { GrpcMethod } from "./grpc-method.js";
import { readOneMessage } from "./grpc-request.js";
import { endResponse, envelopeOf } from "./grpc-response.js";

type UnarySpec = MethodImplSpec & { kind: "unary" };
type AnyUnaryRequest = UnaryRequest<DescMessage, DescMessage>;
type AnyUnaryResponse = UnaryResponse<DescMessage, DescMessage>;

/** A unary method's interceptor chain, built once: the app's interceptors around the method. */
export type UnaryChain = (req: AnyUnaryRequest) => Promise<AnyUnaryResponse>;

/**
 * The app's interceptor array around a unary method's implementation, as connect's
 * invokeUnaryImplementation wraps it (protocol/invoke-implementation.ts), but once per method
 * instead of once per call: the interceptors keep their state outside the function they
 * return (send-rate's buckets, the journal's database), so one chain serves every call. The
 * innermost step finds its call on the request (callOf) and gives the implementation the
 * HandlerContext connect would (GrpcCall.handlerContext).
 */
export function unaryChain(spec: UnarySpec, interceptors: Interceptor[]): UnaryChain {
  const output = spec.method.output;
  return applyInterceptors(async (req: AnyUnaryRequest): Promise<AnyUnaryResponse> => {
    const call = callOf(req);
    const message = create(output, await spec.impl(req.message, call.handlerContext(req)));
    return call.unaryResponse(message);
  }, interceptors) as UnaryChain;
}

/**
 * One unary gRPC call on the bare HTTP/2 stream, through the same steps as connect's gRPC
 * handler (protocol-grpc/handler-factory.ts): the call's context from the request headers
 * (grpc-timeout, grpc-encoding, grpc-accept-encoding), the one request message, then the
 * app's interceptor array around the method's implementation (unaryChain), and the response
 * written with connect's envelope and trailer helpers. What is left out is connect-node's
 * generic machinery: the async-iterable pipe of generators, two AbortControllers and three
 * Headers per call (GrpcCall makes what a call uses, when it uses it) and Node's
 * compatibility objects.
 */
export async function serveUnary(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  method: GrpcMethod & { chain: UnaryChain },
  pipeline: CallPipeline,
): Promise<void> {
  const { serialization, binary } = method;
  // A unary answer is written with end(), which the slow-consumer guard does not watch (it
  // watches write()): no guard, so no cut signal, and no write pressure.
  const values = pipeline.contextValues(
    undefined,
    undefined,
    stream.session?.socket?.remoteAddress,
  );
  const call = new GrpcCall(stream, headers, method, pipeline);
  let last: Uint8Array | undefined;
  let failed: { error: unknown } | undefined;
  try {
    // Refused before the body is read, as connect does (its transformPrepend).
    if (call.compression.error) throw call.compression.error;
    if (call.timeout.error) throw call.timeout.error;
    const input = await readOneMessage(stream, {
      readMaxBytes: pipeline.readMaxBytes,
      compression: call.compression.request,
      parse: (data) => serialization.getI(binary).parse(data),
      kind: "unary",
    });
    const res = await method.chain(call.unaryRequest(input, headers, values));
    call.adoptHeader(res);
    call.adoptTrailer(res);
    last = await envelopeOf(
      serialization.getO(binary).serialize(res.message),
      call.compression.response,
    );
  } catch (error) {
    failed = { error };
  }
  endResponse(stream, call.responseHeaderObject(), last, call.trailerObject(failed));
  call.end();
}
