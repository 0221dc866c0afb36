import type http2 from "node:http2";

/** HTTP/2 streams whose handler can do nothing before it has the whole request body. */
export interface WholeBodies {
  /**
   * A stream to hold: its body is read here, and its handler (Node's compatibility request
   * and response, connect's handler, the interceptors) started only at the body's end.
   */
  holds(headers: http2.IncomingHttpHeaders): boolean;
  /**
   * The largest message a handler accepts. A body longer than this (or, enveloped, whose
   * first message announces more) is handed on at once, so that the handler refuses it as
   * early as it did without the hold.
   */
  maxBytes: number;
}

/** What was read of a held body when its handler is started. */
export interface HeldBody {
  readonly stream: http2.ServerHttp2Stream;
  readonly chunks: Buffer[];
  /** The client's END_STREAM was read: the chunks are the whole body. */
  readonly ended: boolean;
}

// The length prefix of a gRPC, gRPC-Web or Connect streaming message: a flags byte, then the
// length (uint32, big-endian).
const PREFIX_BYTES = 5;
/** Bodies made of length-prefixed messages (application/grpc-web-text is base64: not read). */
const ENVELOPED = /^application\/(?:connect\+|grpc(?:-web)?(?:[+;]|$))/i;

/**
 * Reads a request body and keeps it, then calls `release` once: at the client's END_STREAM,
 * or as soon as the body is too long to be accepted (then with what came so far; the rest
 * stays in the stream for the handler). A stream that closes first (the client reset it, or
 * REQUEST_TIMEOUT_MS answered and reset it: unfinished-bodies.ts) is never released: no
 * handler was started for it, so there is none to tear down.
 *
 * A body that never ends used to start its handler at its HEADERS and hold it until the
 * timeout: Node's compatibility objects, connect's handler with its async iterables and
 * response writer, all made and torn down for a call that could not run.
 */
export function holdBody(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  maxBytes: number,
  release: (body: HeldBody) => void,
): void {
  const enveloped = ENVELOPED.test(headers["content-type"] ?? "");
  // One message, with its prefix when enveloped: longer is refused by the handler anyway.
  const limit = enveloped ? maxBytes + PREFIX_BYTES : maxBytes;
  const declared = Number(headers["content-length"]);
  const chunks: Buffer[] = [];
  let bytes = 0;
  let prefixRead = !enveloped;
  const stop = () => {
    stream.off("readable", read);
    stream.off("end", ended);
    stream.off("close", stop);
  };
  const handOn = (whole: boolean) => {
    stop();
    release({ stream, chunks, ended: whole });
  };
  // A stream that is reset or closed ends its readable side too ('end' before 'close'):
  // only an end while the stream is open is the client's END_STREAM.
  const ended = () => (stream.closed || stream.destroyed ? stop() : handOn(true));
  const read = () => {
    for (let chunk = stream.read() as Buffer | null; chunk !== null; chunk = stream.read()) {
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes > limit) return handOn(false);
      if (!prefixRead && bytes >= PREFIX_BYTES) {
        prefixRead = true;
        if (announced(chunks) > maxBytes) return handOn(false);
      }
    }
  };
  if (declared > limit) {
    release({ stream, chunks, ended: false });
    return;
  }
  stream.on("readable", read);
  stream.once("end", ended);
  stream.once("close", stop);
}

/**
 * Gives a held body to the compatibility request Node made for its stream, before anything
 * reads it: the stream's own 'data' and 'end' (which the request listens to) are past.
 */
export function replayHeldBody(req: http2.Http2ServerRequest, body: HeldBody): void {
  for (const chunk of body.chunks) req.push(chunk);
  if (body.ended) req.push(null);
}

/** The length the first message's prefix announces (the chunks hold at least the prefix). */
function announced(chunks: Buffer[]): number {
  const first = chunks[0] as Buffer;
  const head = first.length >= PREFIX_BYTES ? first : Buffer.concat(chunks);
  return head.readUInt32BE(1);
}
