import type http2 from "node:http2";
import { create, type DescMessage } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type Interceptor,
  type MethodImplSpec,
  type StreamRequest,
  type StreamResponse,
} from "@connectrpc/connect";
import { encodeShared } from "../http/shared-responses.js";
import { createWritePressure, type WritePressureSource } from "../http/write-pressure.js";
import { callOf } from "./call-objects.js";
import { applyInterceptors, type CallPipeline } from "./call-pipeline.js";
import { GrpcCall } from "./grpc-call.js";
import type { AnyMessage, GrpcMethod } from "./grpc-method.js";
import { readOneMessage } from "./grpc-request.js";
import { endResponse, envelopeOf, sendHeaders } from "./grpc-response.js";

type StreamSpec = MethodImplSpec & { kind: "server_streaming" };
type AnyStreamRequest = StreamRequest<DescMessage, DescMessage>;
type AnyStreamResponse = StreamResponse<DescMessage, DescMessage>;

/** A server-streaming method's interceptor chain, built once (see unaryChain). */
export type ServerStreamChain = (req: AnyStreamRequest) => Promise<AnyStreamResponse>;

/**
 * The app's interceptors around a server-streaming method's implementation, as connect's
 * transformInvokeImplementation runs it (protocol/invoke-implementation.ts): the one request
 * message is read inside the chain (so the interceptors see a body that does not decode, as
 * on connect-node), then the implementation's messages are the response. Built once per
 * method; connect's own wrapping put three more async generators (and their helpers'
 * closures) around every stream, which an idle subscription holds for hours.
 */
export function serverStreamChain(
  spec: StreamSpec,
  interceptors: Interceptor[],
): ServerStreamChain {
  return applyInterceptors(async (req: AnyStreamRequest): Promise<AnyStreamResponse> => {
    const call = callOf(req);
    const input = await ensureSingle(req.message);
    // The implementation may yield partial messages; the writer completes them (create()).
    const messages = spec.impl(input, call.handlerContext(req)) as AsyncIterable<never>;
    return call.streamResponse(messages);
  }, interceptors) as ServerStreamChain;
}

/**
 * One server-streaming gRPC call (Subscribe, WatchTeam) on the bare HTTP/2 stream, through
 * the app's interceptor array (serverStreamChain), as connect's gRPC handler runs it: the
 * headers go out with the first message, each message is one envelope, the status is in the
 * trailers.
 *
 * Not an async function: its arguments (Node's header object among them) would stay on the
 * heap for as long as the stream is open. Only the request the interceptors see keeps the
 * headers and the context values, and nothing keeps that request once the chain answered
 * (the interceptors' stream hooks keep only what they need of it), so an idle stream holds
 * its handler's generator, the hooks, its GrpcCall and writeMessages' frame.
 */
export function serveServerStream(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  cut: AbortSignal | undefined,
  method: GrpcMethod & { chain: ServerStreamChain },
  pipeline: CallPipeline,
  /** What escapes the call (a bug): the shared reporter, not a closure per stream. */
  escaped: Escaped,
): void {
  const pressure = createWritePressure();
  const call = new GrpcCall(stream, headers, method, pipeline);
  const values = pipeline.contextValues(cut, pressure, stream.session?.socket?.remoteAddress);
  const input = new OneRequestMessage(stream, call, pipeline.readMaxBytes);
  let answer: Promise<AnyStreamResponse>;
  try {
    answer = method.chain(call.streamRequest(input, headers, values));
  } catch (error) {
    answer = Promise.reject(error);
  }
  void writeMessages(stream, call, pressure, answer, escaped);
}

/** Reports an error that escaped a call (grpc-calls.ts logs it and resets the stream). */
export type Escaped = (stream: http2.ServerHttp2Stream, path: string, err: unknown) => void;

/**
 * Writes the chain's answer out. What a slow stream holds: the next message is pulled from
 * the handler only once the last was written out (or the stream drained), and a write the
 * stream does not accept at once is reported to the handler through its write pressure
 * (handlers/subscribe.ts then lets go of the rest of its page).
 */
async function writeMessages(
  stream: http2.ServerHttp2Stream,
  call: GrpcCall,
  pressure: WritePressureSource,
  answer: Promise<AnyStreamResponse>,
  escaped: Escaped,
): Promise<void> {
  let failed: { error: unknown } | undefined;
  try {
    const res = await answer;
    call.adoptHeader(res);
    const { serialization, binary, spec } = call.method;
    for await (const message of res.message) {
      if (stream.destroyed || stream.closed) break;
      if (!stream.headersSent) sendHeaders(stream, call.responseHeaderObject());
      const { response: compression } = call.compression;
      const bytes = await encodeShared(message, compression === null, () =>
        envelopeOf(
          serialization.getO(binary).serialize(create(spec.method.output, message)),
          compression,
        ),
      );
      if (!stream.write(bytes)) {
        // Not taken at once: the handler lets go of what it holds, and is asked for the
        // next message only once the client reads again.
        pressure.blocked();
        await drained(stream, call.signal);
      }
    }
    call.adoptTrailer(res);
  } catch (error) {
    failed = { error };
  }
  try {
    endResponse(stream, call.responseHeaderObject(), undefined, call.trailerObject(failed));
    call.end();
  } catch (err) {
    const { method } = call.method.spec;
    escaped(stream, `/${method.parent.typeName}/${method.name}`, err);
  }
}

/**
 * The request's one message, as the chain's input: read from the stream when first asked
 * for (inside the interceptors, as on connect-node), then done. A class, not an object of
 * closures.
 */
class OneRequestMessage implements AsyncIterableIterator<AnyMessage> {
  #read = false;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly call: GrpcCall,
    private readonly readMaxBytes: number,
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<AnyMessage> {
    return this;
  }

  async next(): Promise<IteratorResult<AnyMessage>> {
    const { call } = this;
    // Refused before the body is read, as connect does (its transformPrepend).
    if (call.compression.error) throw call.compression.error;
    if (call.timeout.error) throw call.timeout.error;
    if (this.#read) return { done: true, value: undefined };
    this.#read = true;
    const { serialization, binary } = call.method;
    const value = await readOneMessage(this.stream, {
      readMaxBytes: this.readMaxBytes,
      compression: call.compression.request,
      parse: (data) => serialization.getI(binary).parse(data),
      kind: "server-streaming",
    });
    return { done: false, value };
  }
}

/** connect's ensureSingle (protocol/invoke-implementation.ts): exactly one request message. */
async function ensureSingle<T>(input: AsyncIterable<T>): Promise<T> {
  const it = input[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true) {
    throw new ConnectError(
      "protocol error: missing input message for server-streaming method",
      Code.Unimplemented,
    );
  }
  const second = await it.next();
  if (second.done !== true) {
    throw new ConnectError(
      "protocol error: received extra input message for server-streaming method",
      Code.Unimplemented,
    );
  }
  return first.value;
}

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
