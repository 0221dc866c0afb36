import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { keepSessionAlive, keepSocketAlive } from "./connection-keepalive.js";
import { type HeldBody, holdBody, replayHeldBody, type WholeBodies } from "./held-bodies.js";
import {
  closeWhenIdle,
  IdleConnections,
  idleSocket,
  trackHttp1Requests,
} from "./idle-connections.js";
import { finishUnreadRequestBodies } from "./oversized-request-bodies.js";
import { guardSlowConsumer, guardSlowStream } from "./slow-consumer-guard.js";
import { timeOutUnfinishedBody } from "./unfinished-bodies.js";

type Handler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** HTTP/2 streams a handler serves on the bare stream, without Node's req/res objects. */
export interface RawStreams {
  accepts(headers: http2.IncomingHttpHeaders): boolean;
  /**
   * `guard()` puts the slow-consumer guard on the stream's writes and returns the signal that
   * aborts when the guard cut it; a call whose response is not written with write() (a unary
   * answer is one end()) need not pay for it.
   */
  serve(
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    guard: () => AbortSignal,
  ): void;
}

export interface ServerOptions {
  /** The request handler (App.nodeHandler()), served over HTTP/1.1 and HTTP/2 alike. */
  handler: Handler;
  /** HTTP/2 streams served before (instead of) `handler` (App.rawStreams()). */
  rawStreams?: RawStreams | undefined;
  /**
   * HTTP/2 streams (not taken by `rawStreams`) whose body is read whole before `handler` is
   * started for them (App.wholeBodies()): one that never ends costs no handler.
   */
  wholeBodies?: WholeBodies | undefined;
  host: string;
  /** 0 picks a free port. */
  port: number;
  logger: Logger;
  /** Connections are pinged this often to find vanished clients. Default 30 s. */
  keepaliveIntervalMs?: number;
  /** A response whose client reads nothing for this long is cut. Default 30 s. */
  slowConsumerTimeoutMs?: number;
  /**
   * Time for a new connection to show its protocol and, over HTTP/1.1, for a request's
   * headers to arrive. Default 10 s.
   */
  headersTimeoutMs?: number;
  /**
   * Time for a whole request to arrive: HTTP/1.1 headers and body (408), an HTTP/2 stream's
   * body (DEADLINE_EXCEEDED or 408, then RST_STREAM). Default 60 s.
   */
  requestTimeoutMs?: number;
  /** An HTTP/2 connection with no open stream for this long is closed (GOAWAY). Default 5 min. */
  idleConnectionTimeoutMs?: number;
  /**
   * Open connections (of every protocol). At the cap, a new one retires the longest-idle
   * connection that serves no call (an HTTP/2 one with no open stream gets GOAWAY; one that
   * has said nothing yet, or an HTTP/1.1 one between requests, is closed); it is refused at
   * accept only when there is none to retire. Default 10,000.
   */
  maxConnections?: number;
  /** Concurrent streams a client may open on one HTTP/2 connection (SETTINGS). Default 256. */
  maxStreamsPerConnection?: number;
  /** Counts connections by HTTP version and open HTTP/2 streams (App.metrics). */
  metrics?:
    | Pick<Metrics, "connectionOpened" | "streamOpened" | "streamClosed" | "refused">
    | undefined;
}

export interface RunningServer {
  readonly port: number;
  /** http://host:port */
  readonly url: string;
  /**
   * Graceful stop: no new connections; calls in flight may finish for `graceMs`, then the
   * remaining connections are destroyed. `beforeDrain` runs once listening has stopped
   * (end the streams there, so they finish cleanly instead of being cut).
   */
  close(graceMs: number, beforeDrain?: () => void): Promise<void>;
}

// Every HTTP/2 connection starts with this preface; an HTTP/1.1 one starts with a method.
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0");

// HTTP/2 receive windows (Node's default: 64 KiB per stream and per connection). A message
// up to readMaxBytes (1 MiB) then arrives in one round trip, and so does the rest of an
// oversized body that is refused early and then read and dropped
// (oversized-request-bodies.ts): what a Node client cannot send stays counted against its
// session memory, and calls sent one after another outran the dropping.
const STREAM_RECEIVE_WINDOW = 2 * 1024 * 1024;
const CONNECTION_RECEIVE_WINDOW = 8 * 1024 * 1024;

/**
 * One cleartext port for gRPC, gRPC-Web and Connect, over HTTP/2 (prior knowledge) and
 * HTTP/1.1. Node's http2 server with allowHTTP1 only falls back to HTTP/1.1 under TLS, so
 * the first bytes of each connection decide which of two servers (sharing one handler)
 * gets it.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { handler, logger } = options;
  const keepaliveMs = options.keepaliveIntervalMs ?? 30_000;
  const slowConsumerMs = options.slowConsumerTimeoutMs ?? 30_000;
  let inFlight = 0;
  let stopping = false;
  let drained: (() => void) | undefined;
  /** Counts a call in flight until `call` closes (a graceful stop waits for none left). */
  // One listener for every call (not a closure each: an idle stream keeps it for hours);
  // `on`, not `once`: a response or stream emits 'close' once, and once() wraps each
  // listener in two more objects.
  const callClosed = () => {
    inFlight--;
    if (inFlight === 0) drained?.();
  };
  const countInFlight = (call: { on(event: "close", listener: () => void): unknown }) => {
    inFlight++;
    call.on("close", callClosed);
  };
  const logCut = (path: string | undefined) => (stalledMs: number) =>
    logger.warn(
      { event: "slow_consumer_cut", path, stalledMs },
      "cut a response whose client stopped reading; it can resume from its last seq",
    );
  /** The held body of the stream whose compatibility objects are being made (below). */
  let releasing: HeldBody | undefined;
  const counted: Handler = (req, res) => {
    if (releasing !== undefined && "stream" in req && req.stream === releasing.stream) {
      replayHeldBody(req, releasing);
    }
    countInFlight(res);
    if (stopping && "setHeader" in res && !res.headersSent && req.httpVersionMajor === 1) {
      res.setHeader("connection", "close");
    }
    // What every response gets at the Node level, here and nowhere else: counted in flight,
    // told to close the connection while stopping, the rest of an unread request body read
    // and dropped once the response is complete, cut when its client stops reading. Both
    // cover /mcp and the 404s too. What connect's answers need is fixed in connect-es
    // itself (connect-adapter.ts says what and why).
    finishUnreadRequestBodies(req, res);
    guardSlowConsumer(req, res, slowConsumerMs, logCut(req.url));
    handler(req, res);
  };

  const headersTimeoutMs = options.headersTimeoutMs ?? 10_000;
  // Node refuses a request timeout shorter than the headers timeout (the headers are part of
  // the request): a shorter one is raised to it, and said so at start, not silently.
  const requestTimeoutMs = Math.max(options.requestTimeoutMs ?? 60_000, headersTimeoutMs);
  if (requestTimeoutMs !== (options.requestTimeoutMs ?? 60_000)) {
    logger.warn(
      {
        event: "request_timeout_raised",
        requestTimeoutMs: options.requestTimeoutMs,
        headersTimeoutMs,
        effectiveMs: requestTimeoutMs,
      },
      "REQUEST_TIMEOUT_MS is shorter than HEADERS_TIMEOUT_MS: requests get HEADERS_TIMEOUT_MS",
    );
  }
  const h1 = http.createServer(
    {
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      // How often Node checks those two: often enough that a limit is kept within a fraction.
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, headersTimeoutMs / 2)),
    },
    counted as http.RequestListener,
  );
  // Node enforces headersTimeout and requestTimeout only once the server has emitted
  // 'listening' (that starts its connection tracking). This server never listens itself:
  // it is handed sockets by the TCP server below, so the event is emitted here. Without it,
  // headers trickled at a byte every 2 s held a connection for minutes.
  h1.emit("listening");
  const h2 = http2.createServer(
    {
      settings: {
        initialWindowSize: STREAM_RECEIVE_WINDOW,
        // Advertised to the client, and enforced by Node (streams past it are refused).
        maxConcurrentStreams: options.maxStreamsPerConnection ?? 256,
      },
    },
    counted as (r: http2.Http2ServerRequest, s: http2.Http2ServerResponse) => void,
  );
  const raw = options.rawStreams;
  const whole = options.wholeBodies;
  if (raw || whole) {
    // Node serves `handler` through one 'stream' listener that builds the compatibility
    // objects (req/res). Streams `raw` accepts skip it: they are served on the bare stream,
    // counted and guarded against slow consumers the same way. Streams `whole` holds get it
    // once their body is in (held-bodies.ts).
    const [compat] = h2.listeners("stream") as ((...args: unknown[]) => void)[];
    if (compat) h2.removeListener("stream", compat);
    h2.on("stream", (stream, headers, ...rest) => {
      if (raw?.accepts(headers)) {
        countInFlight(stream);
        // A reset (the client cancelled, or the guard cut it) is an 'error' on a bare stream:
        // it ends the call through 'close', and must not end the process.
        stream.on("error", ignore);
        raw.serve(stream, headers, () =>
          guardSlowStream(stream, slowConsumerMs, logCut(headers[":path"])),
        );
        return;
      }
      if (whole && !stream.endAfterHeaders && whole.holds(headers)) {
        // Counted while held, as its handler will be: a graceful stop waits for it.
        countInFlight(stream);
        stream.on("error", ignore);
        holdBody(stream, headers, whole.maxBytes, (body) => {
          // Node's listener emits 'request' at once: `counted` gives the body to its request.
          releasing = body;
          try {
            compat?.(stream, headers, ...rest);
          } finally {
            releasing = undefined;
          }
        });
        return;
      }
      compat?.(stream, headers, ...rest);
    });
  }
  const metrics = options.metrics;
  // After the listeners above (the first 'stream' listener is Node's compatibility one).
  if (metrics) {
    h2.on("stream", (stream) => {
      metrics.streamOpened();
      stream.on("close", metrics.streamClosed);
    });
  }
  // One log line per second at most, with the count and the last path: thousands of streams
  // opened together expire together, and a synchronous line each (pino writes to stderr)
  // made the burst of resets longer by as much again.
  let lastTimedOutPath: string | undefined;
  const timeouts = logEvery(1_000, (reset) =>
    logger.warn(
      { event: "request_timeout", path: lastTimedOutPath, timeoutMs: requestTimeoutMs, reset },
      "reset HTTP/2 requests whose body did not finish within REQUEST_TIMEOUT_MS",
    ),
  );
  // HTTP/1.1's requestTimeout, for HTTP/2 request bodies (Node has none for them).
  h2.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) =>
    timeOutUnfinishedBody(stream, headers, requestTimeoutMs, () => {
      metrics?.refused("request-timeout", "limit");
      lastTimedOutPath = headers[":path"];
      timeouts();
    }),
  );
  const idleConnectionMs = options.idleConnectionTimeoutMs ?? 300_000;
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  // Every connection that serves no call, of any protocol: MAX_CONNECTIONS retires these.
  const idleConnections = new IdleConnections();
  trackHttp1Requests(h1, idleConnections);
  h2.on("session", (session) => {
    sessions.add(session);
    if (!session.destroyed) session.setLocalWindowSize(CONNECTION_RECEIVE_WINDOW);
    session.once("close", () => sessions.delete(session));
    keepSessionAlive(session, keepaliveMs);
    closeWhenIdle(
      session,
      idleConnectionMs,
      () => metrics?.refused("idle-connection", "limit"),
      idleConnections,
    );
    if (stopping) session.close();
  });
  h2.on("sessionError", () => {});

  const maxConnections = options.maxConnections ?? 10_000;
  // Connections retired to admit a new one whose socket has not closed yet: not counted.
  let retiring = 0;
  // One log line per second at most, with the count, so that a flood of connections is not
  // also a flood of log lines; every eviction and refusal is counted in the metrics.
  const evictions = logEvery(1_000, (evicted) =>
    logger.warn(
      { event: "connection_evicted", limit: "MAX_CONNECTIONS", max: maxConnections, evicted },
      "retired the longest-idle connections (HTTP/2 GOAWAY; silent or between-requests HTTP/1.1 closed) to admit new ones: MAX_CONNECTIONS are open",
    ),
  );
  const drops = logEvery(1_000, (dropped) =>
    logger.warn(
      { event: "connection_refused", limit: "MAX_CONNECTIONS", max: maxConnections, dropped },
      "refused new connections: MAX_CONNECTIONS are open and each is serving a call",
    ),
  );
  /**
   * At the cap, a connection that serves no call makes way for a new one: idle connections
   * held by one client must not lock out everyone else. That includes a connection that has
   * said nothing yet (it would hold its place for HEADERS_TIMEOUT_MS) and an HTTP/1.1 one
   * between requests. Refused only when every connection is serving a call.
   */
  const admit = (): boolean => {
    if (sockets.size - retiring < maxConnections) return true;
    const victim = idleConnections.takeLongestIdle();
    if (!victim) {
      metrics?.refused("max-connections", "limit");
      drops();
      return false;
    }
    retiring++;
    victim.onceClosed(() => retiring--);
    metrics?.refused("max-connections-evicted", "limit");
    evictions();
    victim.retire(); // GOAWAY, or the socket destroyed: nothing is served on it
    return true;
  };

  const tcp = net.createServer((socket) => {
    if (!admit()) {
      socket.on("error", () => {});
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    keepSocketAlive(socket, keepaliveMs);
    // What http.createServer does for connections it accepts itself (noDelay, default true).
    // Without it, a response's last small write (e.g. one held until the request body is
    // in) waited for the client's delayed ACK, 40 ms.
    socket.setNoDelay(true);
    // A connection that does not show its protocol in time holds nothing any longer; until
    // then it is idle (the first to make way at MAX_CONNECTIONS).
    const sniffing = setTimeout(() => socket.destroy(), headersTimeoutMs);
    idleConnections.markIdle(socket, idleSocket(socket));
    socket.once("close", () => {
      clearTimeout(sniffing);
      idleConnections.markBusy(socket);
    });
    routeBySniffing(socket, (isH2) => {
      clearTimeout(sniffing);
      // HTTP/2: its session is tracked instead. HTTP/1.1: idle again once its requests are
      // answered (trackHttp1Requests); until its first request comes, as new as it gets.
      if (isH2) idleConnections.markBusy(socket);
      else idleConnections.markIdle(socket, idleSocket(socket));
      if (metrics) socket.once("close", metrics.connectionOpened(isH2 ? "2" : "1.1"));
      (isH2 ? h2 : h1).emit("connection", socket);
    });
  });

  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(options.port, options.host, () => {
      tcp.off("error", reject);
      resolve();
    });
  });
  const address = tcp.address() as net.AddressInfo;
  const hostForUrl = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    port: address.port,
    url: `http://${hostForUrl}:${address.port}`,
    async close(graceMs, beforeDrain) {
      if (stopping) return;
      stopping = true;
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      beforeDrain?.();
      for (const session of sessions) session.close(); // GOAWAY: running streams may finish
      h1.closeIdleConnections();
      const allDone = new Promise<void>((resolve) => {
        drained = resolve;
        if (inFlight === 0) resolve();
      });
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      });
      const late = await Promise.race([allDone.then(() => false), timedOut]);
      if (late) logger.warn({ event: "stop_grace_exceeded", inFlight }, "calls cut at stop");
      else {
        // The last calls' final frames (trailers, END_STREAM) are still on their way out:
        // let the connections close by themselves (GOAWAY done, keep-alive idle) before
        // anything is destroyed, within what is left of the grace period.
        h1.closeIdleConnections();
        const socketsClosed = new Promise<void>((resolve) => {
          const poll = setInterval(() => {
            if (sockets.size === 0) {
              clearInterval(poll);
              resolve();
            }
          }, 10);
          void timedOut.then(() => {
            clearInterval(poll);
            resolve();
          });
        });
        await socketsClosed;
      }
      clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      for (const session of sessions) session.destroy();
      await closed;
    },
  };
}

/** Calls `log` with how many times it was asked, at most once per `ms` (the first at once). */
function logEvery(ms: number, log: (count: number) => void): () => void {
  let count = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (count === 0) return;
    log(count);
    count = 0;
    timer = setTimeout(flush, ms);
    timer.unref();
  };
  return () => {
    count++;
    if (!timer) flush();
  };
}

/**
 * Reads the first bytes of a connection (in paused mode) and hands it on with those bytes
 * put back: both servers take data already buffered in the socket (Node PR 41185 for HTTP/2).
 */
function routeBySniffing(socket: net.Socket, route: (isH2: boolean) => void): void {
  let head = Buffer.alloc(0);
  const onReadable = () => {
    for (let chunk = socket.read(); chunk !== null; chunk = socket.read()) {
      head = Buffer.concat([head, chunk]);
    }
    if (head.length === 0) return;
    const n = Math.min(head.length, H2_PREFACE.length);
    const prefixMatches = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    // Decide as soon as the bytes rule HTTP/2 out, or the whole preface is there.
    if (prefixMatches && n < H2_PREFACE.length) return;
    socket.off("readable", onReadable);
    socket.unshift(head);
    route(prefixMatches);
  };
  socket.on("readable", onReadable);
}

/** A bare stream's 'error' listener: its reset ends the call through 'close' instead. */
function ignore(): void {}
