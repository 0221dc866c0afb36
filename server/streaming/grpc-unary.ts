import type http2 from "node:http2";
import { Code, ConnectError, type MethodImplSpec } from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { type CallPipeline, createCallContext, type GrpcMethod } from "./grpc-call-context.js";
import { readOneMessage } from "./grpc-request.js";
import { endResponse, envelopeOf, setErrorTrailers } from "./grpc-response.js";

/** The reason a call's signal aborts with when its client reset the stream mid-call. */
export const clientGone = () => new ConnectError("the client went away", Code.Canceled);

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
  const { context, timeout, compression } = createCallContext(
    headers,
    method,
    pipeline,
    pipeline.contextValues(cut, undefined),
  );
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
