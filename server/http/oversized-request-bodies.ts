import type http from "node:http";
import http2 from "node:http2";
import type { Readable } from "node:stream";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** The most of an unread request body read and dropped; past it the call is cut. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
/** How long a client may take to send the rest of a body being dropped. */
const DRAIN_MAX_MS = 30_000;
/** HTTP/2: a client that has sent nothing for this long after the response is done sending. */
const QUIET_MS = 100;

/**
 * Lets a response that is sent before its request body has arrived (a message over
 * readMaxBytes, or an error in the first of several messages) reach the client, and leave
 * the connection usable. Unread bytes are read and dropped (bounded), because nothing else
 * works with Node's clients:
 *
 * - HTTP/1.1: a server that closes the connection with request bytes unread makes the
 *   client's writes fail, and the client drops the response it was reading ("response
 *   aborted"). The end of the response is held until the body is in.
 * - HTTP/2: the request stream stayed open, the client's unsent bytes stayed queued, and
 *   after ~8 such calls Node's client refused every new stream on the connection
 *   (ENHANCE_YOUR_CALM, 10 MB maxSessionMemory). A reset (RST_STREAM NO_ERROR, RFC 9113
 *   §8.1) alone does not help: Node never takes the unsent bytes of a reset stream off its
 *   session memory count, and drops a response that arrives together with the reset
 *   ("Premature close"). So the rest is read, and once the client has sent nothing for
 *   QUIET_MS (by then it has read the response) the stream is reset with NO_ERROR:
 *   connect-es sends no END_STREAM once it has its response.
 */
export function finishUnreadRequestBodies(req: Request, res: Response): void {
  // A reader that stops early must not destroy the request: connect-adapter.ts gives
  // connect an iterator that does not, and the MCP endpoint reads with 'data' events.
  if ("stream" in req) {
    const stream = req.stream;
    // Node's compatibility layer ends every response with trailers, sent from its own,
    // earlier 'wantTrailers' listener: after it the response is complete.
    stream.once("wantTrailers", () => {
      if (!stream.closed && !stream.readableEnded) drainThenReset(req, stream);
    });
  } else {
    holdEndUntilDrained(req, res as http.ServerResponse);
  }
}

function holdEndUntilDrained(req: http.IncomingMessage, res: http.ServerResponse): void {
  const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
  (res as { end: (...args: unknown[]) => http.ServerResponse }).end = (...args: unknown[]) => {
    if (req.complete || req.destroyed) return end(...args);
    const stop = dropRest(req, {
      end: () => end(...args),
      tooMuch: () => res.socket?.destroy(),
    });
    res.once("close", stop); // the client went away
    return res;
  };
}

/**
 * For an HTTP/2 stream served without Node's compatibility objects, once its response is
 * complete (trailers sent): the rest of an unread request is read and dropped, as above.
 */
export function finishUnreadStreamBody(stream: http2.ServerHttp2Stream): void {
  if (!stream.closed && !stream.readableEnded) drainThenReset(stream, stream);
}

function drainThenReset(body: Readable, stream: http2.ServerHttp2Stream): void {
  const reset = () => {
    stop();
    if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    // Node keeps a closed stream until its request data has been read.
    stream.destroy();
  };
  let stop = () => {};
  const quiet = setTimeout(reset, QUIET_MS);
  stop = dropRest(body, {
    chunk: () => quiet.refresh(),
    end: () => clearTimeout(quiet), // END_STREAM: the stream closes by itself
    tooMuch: reset,
  });
  stream.once("close", () => {
    clearTimeout(quiet);
    stop();
  });
}

/** Reads and drops the rest of a body. Returns a function that stops. */
function dropRest(
  body: Readable,
  on: { chunk?: () => void; end: () => void; tooMuch: () => void },
): () => void {
  let dropped = 0;
  const stop = () => {
    clearTimeout(timer);
    body.off("readable", read);
    body.off("end", onEnd);
  };
  const tooMuch = () => {
    stop();
    on.tooMuch();
  };
  const onEnd = () => {
    stop();
    on.end();
  };
  // read() works whether or not someone else still listens to the body.
  const read = () => {
    for (let chunk = body.read(); chunk !== null; chunk = body.read()) {
      dropped += (chunk as Buffer).length;
      if (dropped > DRAIN_MAX_BYTES) return tooMuch();
      on.chunk?.();
    }
  };
  const timer = setTimeout(tooMuch, DRAIN_MAX_MS);
  timer.unref();
  body.on("readable", read);
  body.once("end", onEnd);
  read();
  return stop;
}
