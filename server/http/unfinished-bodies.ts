import http2 from "node:http2";

/** The limit's name in answers and logs: the variable that sets it. */
export const REQUEST_TIMEOUT = "REQUEST_TIMEOUT_MS";

/**
 * Ends an HTTP/2 stream whose request body has not finished (no END_STREAM from the client)
 * `timeoutMs` after its headers, as Node ends an HTTP/1.1 request with 408 at requestTimeout.
 * No method of the service takes a client stream, so every request body must end; one that
 * does not would hold its stream, its handler and its buffers for as long as the client likes.
 *
 * The answer is what the protocol allows when nothing was answered yet: gRPC (and gRPC-Web)
 * get DEADLINE_EXCEEDED as trailers-only, the rest 408 with a Connect error body; then the
 * stream is reset (RST_STREAM NO_ERROR: the client may stop sending). Past the response
 * headers, only the reset is left.
 */
export function timeOutUnfinishedBody(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  timeoutMs: number,
  onTimeout: () => void,
): void {
  if (stream.endAfterHeaders) return;
  const timer = setTimeout(() => {
    if (stream.destroyed || stream.closed || stream.state.remoteClose) return;
    onTimeout();
    const message = `request body not finished within ${REQUEST_TIMEOUT} (${timeoutMs} ms)`;
    try {
      if (!stream.headersSent) answer(stream, headers, message);
    } catch {
      // The stream ended meanwhile: the reset below is all there is to do.
    }
    stream.close(http2.constants.NGHTTP2_NO_ERROR);
  }, timeoutMs);
  // The client's END_STREAM (once the handler has read the body), or the stream's end. Both
  // listeners go at the first: a stream open for hours (Subscribe) would otherwise keep the
  // cleared timer, and with it this call's headers, until it closes.
  const settled = () => {
    clearTimeout(timer);
    stream.off("close", settled);
    stream.off("end", settled);
  };
  stream.on("close", settled);
  stream.on("end", settled);
}

function answer(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  message: string,
): void {
  const type = headers["content-type"] ?? "";
  if (type.startsWith("application/grpc")) {
    stream.respond(
      {
        ":status": 200,
        "content-type": type,
        "grpc-status": "4", // DEADLINE_EXCEEDED
        "grpc-message": encodeURIComponent(message),
      },
      { endStream: true },
    );
    return;
  }
  stream.respond({ ":status": 408, "content-type": "application/json" });
  stream.end(JSON.stringify({ code: "deadline_exceeded", message }));
}
