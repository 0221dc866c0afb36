import type http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { finishUnreadStreamBody } from "../http/oversized-request-bodies.js";
import {
  type Compression,
  encodeEnvelope,
  envelopeCompress,
  setTrailerStatus,
} from "./connect-internals.js";

/** connect's default compressMinBytes: smaller messages are sent uncompressed. */
export const COMPRESS_MIN_BYTES = 1024;

/** A message as one gRPC envelope, compressed when the response is and it is large enough. */
export async function envelopeOf(
  data: Uint8Array,
  compression: Compression | null,
): Promise<Uint8Array> {
  if (compression === null || data.byteLength < COMPRESS_MIN_BYTES) return encodeEnvelope(0, data);
  const compressed = await envelopeCompress({ flags: 0, data }, compression, COMPRESS_MIN_BYTES);
  return encodeEnvelope(compressed.flags, compressed.data);
}

/**
 * The trailers of a call that ended with `error` (any error: what is not a ConnectError is
 * Internal, its cause kept out of the wire), as connect's gRPC handler writes them: status,
 * message, details and the error's metadata, by connect's own setTrailerStatus.
 */
export function setErrorTrailers(trailer: Headers, error: unknown): void {
  setTrailerStatus(
    trailer,
    error instanceof ConnectError
      ? error
      : new ConnectError("internal error", Code.Internal, undefined, undefined, error),
  );
}

/**
 * The same trailers as a Node header object, written straight into it: connect's
 * setTrailerStatus only calls set() and append() on its target, so a plain object that does
 * what Headers' set and append do (names lowercased, repeated values joined with ", ") gets
 * what nodeHeaders() of a Headers would give, without the Headers (undici converts and
 * validates every name and value, and forEach sorts them). For a call whose trailers no
 * handler touched: the common refusal.
 */
export function errorTrailerObject(error: unknown): http2.OutgoingHttpHeaders {
  const out: Record<string, string> = {};
  const target: Pick<Headers, "set" | "append"> = {
    set(name, value) {
      out[name.toLowerCase()] = value;
    },
    append(name, value) {
      const key = name.toLowerCase();
      const had = out[key];
      out[key] = had === undefined ? value : `${had}, ${value}`;
    },
  };
  setErrorTrailers(target as Headers, error);
  return out;
}

/** WHATWG headers as Node's HTTP/2 header object. */
export function nodeHeaders(headers: Headers): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/** Sends the response headers now (once), unless the stream is gone. */
export function sendHeaders(
  stream: http2.ServerHttp2Stream,
  header: http2.OutgoingHttpHeaders,
): void {
  if (stream.headersSent || stream.destroyed || stream.closed) return;
  stream.respond({ ":status": 200, ...header }, { waitForTrailers: true });
}

/**
 * Ends the response: headers (if not sent yet), the last bytes, then the trailers. A
 * request body left unread (refused early) is then read and dropped, so the connection
 * stays usable. A stream the client already reset gets nothing: nobody is left to tell.
 */
export function endResponse(
  stream: http2.ServerHttp2Stream,
  header: http2.OutgoingHttpHeaders,
  last: Uint8Array | undefined,
  trailers: http2.OutgoingHttpHeaders,
): void {
  if (stream.closed || stream.destroyed || stream.writableEnded) return;
  try {
    sendHeaders(stream, header);
    stream.once("wantTrailers", () => {
      try {
        stream.sendTrailers(trailers);
      } catch {
        return; // the stream closed meanwhile (client reset)
      }
      finishUnreadStreamBody(stream);
    });
    if (last) stream.end(last);
    else stream.end();
  } catch {
    // The stream closed between the check and the response (client reset): nothing to send.
  }
}
