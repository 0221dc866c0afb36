import type http2 from "node:http2";
import { Code, ConnectError, type MethodImplSpec } from "@connectrpc/connect";
import { transformInvokeImplementation } from "@connectrpc/connect/protocol";
import { createWritePressure } from "../http/write-pressure.js";
import { type CallPipeline, createCallContext, type GrpcMethod } from "./grpc-call-context.js";
import { readOneMessage } from "./grpc-request.js";
import { endResponse, envelopeOf, sendHeaders, setErrorTrailers } from "./grpc-response.js";
import { clientGone } from "./grpc-unary.js";

/**
 * One server-streaming gRPC call (Subscribe, WatchTeam) on the bare HTTP/2 stream, through
 * connect's own transformInvokeImplementation with the app's interceptor array, as connect's
 * gRPC handler runs it: the request message is read inside the chain (so the interceptors
 * see a body that does not decode, as on connect-node), the headers go out with the first
 * message, each message is one envelope, the status is in the trailers.
 *
 * What a slow stream holds: the next message is pulled from the handler only once the last
 * was written out (or the stream drained), and a write the stream does not accept at once
 * is reported to the handler through its write pressure (handlers/subscribe.ts then lets
 * go of the rest of its page). Without connect-node's pipe of transforms, an idle stream
 * holds its handler's generator, the interceptors' wrappers and this frame.
 */
export async function serveServerStream(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  cut: AbortSignal | undefined,
  method: GrpcMethod,
  pipeline: CallPipeline,
): Promise<void> {
  const { spec, serialization, binary } = method;
  const pressure = createWritePressure();
  const { context, timeout, compression } = createCallContext(
    headers,
    method,
    pipeline,
    pipeline.contextValues(cut, pressure),
  );
  const onClose = () => context.abort(clientGone());
  stream.once("close", onClose);
  let read = false;
  const input: AsyncIterable<unknown> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        // Refused before the body is read, as connect does (its transformPrepend).
        if (compression.error) throw compression.error;
        if (timeout.error) throw timeout.error;
        if (read) return { done: true, value: undefined };
        read = true;
        const value = await readOneMessage(stream, {
          readMaxBytes: pipeline.readMaxBytes,
          compression: compression.request,
          parse: (data) => serialization.getI(binary).parse(data),
          kind: "server-streaming",
        });
        return { done: false, value };
      },
    }),
  };
  const output = serialization.getO(binary);
  try {
    const messages = transformInvokeImplementation(
      spec as MethodImplSpec,
      context,
      pipeline.interceptors,
    )(input as AsyncIterable<never>);
    for await (const message of messages) {
      if (stream.destroyed || stream.closed) break;
      sendHeaders(stream, context.responseHeader);
      const bytes = await envelopeOf(output.serialize(message), compression.response);
      if (!stream.write(bytes)) {
        // Not taken at once: the handler lets go of what it holds, and is asked for the
        // next message only once the client reads again.
        pressure.blocked();
        await drained(stream, context.signal);
      }
    }
  } catch (err) {
    setErrorTrailers(context.responseTrailer, err);
  } finally {
    stream.off("close", onClose);
  }
  endResponse(stream, context.responseHeader, undefined, context.responseTrailer);
  context.abort(STREAM_ENDED);
}

const STREAM_ENDED = new ConnectError("the stream has ended", Code.Canceled);

/** Waits until the client reads again (or the call ends). */
function drained(stream: http2.ServerHttp2Stream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    stream.once("drain", done);
    stream.once("close", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
