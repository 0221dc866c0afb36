import type http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Compression, envelopeDecompress } from "./connect-internals.js";

/** The gRPC envelope's flag for a compressed message. */
const COMPRESSED = 0b1;

export interface OneMessageOptions<I> {
  /** The largest message accepted, compressed or not (connect's readMaxBytes). */
  readMaxBytes: number;
  /** The request's grpc-encoding (null: identity). */
  compression: Compression | null;
  /** The method's input serialization (binary or JSON, limited to readMaxBytes). */
  parse(data: Uint8Array): I;
  /** How connect names the method kind in its protocol errors: "unary", "server-streaming". */
  kind: string;
}

/**
 * The one request message of a gRPC call whose request is a single message (unary,
 * server streaming), read from the bare HTTP/2 stream. It refuses what connect-es refuses,
 * in the same order and with the same codes and messages (its envelope decoder,
 * envelopeDecompress and ensureSingle): a message header over readMaxBytes at once
 * (ResourceExhausted, before the rest is read), a compressed message without an encoding,
 * a body that does not parse, an incomplete envelope, no message or a second one. Each
 * message is decoded as soon as it is complete, as connect's pipeline does.
 *
 * Stopping early leaves the stream open: the refusal is still to be sent, and the rest of
 * the body is then read and dropped (finishUnreadStreamBody), so the connection stays usable.
 */
export function readOneMessage<I>(
  stream: http2.ServerHttp2Stream,
  options: OneMessageOptions<I>,
): Promise<I> {
  return new Promise<I>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let buffered = 0;
    let message: I | undefined;
    let count = 0;
    let decoding = false;
    let ended = false;
    let settled = false;
    const stop = () => {
      settled = true;
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("close", onEnd);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      stop();
      reject(err);
    };
    /** The next complete envelope off the front of the buffer, or undefined. */
    const nextEnvelope = (): { flags: number; data: Uint8Array } | undefined => {
      if (buffered < 5) return undefined;
      const head = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const length = head.readUInt32BE(1);
      if (length > options.readMaxBytes) {
        throw new ConnectError(
          `message size ${length} is larger than configured readMaxBytes ${options.readMaxBytes}`,
          Code.ResourceExhausted,
        );
      }
      if (buffered < 5 + length) {
        chunks.length = 0;
        chunks.push(head);
        return undefined;
      }
      const flags = head[0] as number;
      const data = head.subarray(5, 5 + length);
      const rest = head.subarray(5 + length);
      chunks.length = 0;
      if (rest.byteLength > 0) chunks.push(rest);
      buffered = rest.byteLength;
      return { flags, data };
    };
    const accept = (parsed: I) => {
      count++;
      if (count > 1) {
        throw new ConnectError(
          `protocol error: received extra input message for ${options.kind} method`,
          Code.Unimplemented,
        );
      }
      message = parsed;
    };
    /** Decodes every complete envelope; pauses the stream while one is decompressed. */
    const drain = () => {
      for (;;) {
        if (decoding || settled) return;
        const envelope = nextEnvelope();
        if (!envelope) break;
        if ((envelope.flags & COMPRESSED) === 0) {
          accept(options.parse(envelope.data));
          continue;
        }
        decoding = true;
        stream.pause();
        envelopeDecompress(envelope, options.compression, options.readMaxBytes)
          .then((plain) => {
            decoding = false;
            accept(options.parse(plain.data));
            stream.resume();
            drain();
          })
          .catch(fail);
        return;
      }
      if (ended) finish();
    };
    const finish = () => {
      if (settled) return;
      if (buffered > 0) {
        throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
      }
      if (count === 0) {
        throw new ConnectError(
          `protocol error: missing input message for ${options.kind} method`,
          Code.Unimplemented,
        );
      }
      stop();
      resolve(message as I);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      buffered += chunk.byteLength;
      try {
        drain();
      } catch (err) {
        fail(err);
      }
    };
    const onEnd = () => {
      ended = true;
      try {
        if (!decoding) finish();
      } catch (err) {
        fail(err);
      }
    };
    stream.on("data", onData);
    stream.once("end", onEnd);
    // Reset by the client before its body was in: the call ends through its own 'close'.
    stream.once("close", onEnd);
    // The body may have ended before this read began (an empty one, with END_STREAM on the
    // HEADERS frame, read by the time the handler asked): 'end' was then emitted already.
    if (stream.readableEnded) onEnd();
  });
}
