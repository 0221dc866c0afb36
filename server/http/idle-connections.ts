import type http from "node:http";
import type http2 from "node:http2";
import type net from "node:net";

/** How to retire one idle connection, and learn when it has closed. */
interface Retirable {
  isOpen(): boolean;
  retire(): void;
  onceClosed(listener: () => void): void;
}

/**
 * The connections that serve no call, longest idle first: the ones that may be retired to
 * admit a new connection when MAX_CONNECTIONS are open. Three kinds are kept here:
 * a connection that has not shown its protocol yet (a silent TCP connection), an HTTP/1.1
 * connection between requests (keep-alive), and an HTTP/2 session with no open stream. A
 * connection serving a call is never taken.
 */
export class IdleConnections {
  // A Map iterates in insertion order: re-inserting on going idle keeps the longest idle first.
  private readonly idle = new Map<object, Retirable>();

  markIdle(key: object, connection: Retirable): void {
    this.idle.delete(key);
    this.idle.set(key, connection);
  }

  markBusy(key: object): void {
    this.idle.delete(key);
  }

  /** Takes the longest-idle open connection out of the set (the caller retires it). */
  takeLongestIdle(): Retirable | undefined {
    for (const [key, connection] of this.idle) {
      this.idle.delete(key);
      if (connection.isOpen()) return connection;
    }
    return undefined;
  }
}

/** A socket as an idle connection: retiring it destroys it (nothing is being served on it). */
export function idleSocket(socket: net.Socket): Retirable {
  return {
    isOpen: () => !socket.destroyed,
    retire: () => socket.destroy(),
    onceClosed: (listener) => socket.once("close", listener),
  };
}

/** An HTTP/2 session as an idle connection: retiring it sends GOAWAY (it ends at once). */
function idleSession(session: http2.ServerHttp2Session): Retirable {
  return {
    isOpen: () => !session.closed && !session.destroyed,
    retire: () => session.close(),
    onceClosed: (listener) => session.once("close", listener),
  };
}

/**
 * Keeps `idle` told whether an HTTP/1.1 connection has a request in flight: between
 * requests (keep-alive, closed by Node after its keepAliveTimeout) it may be retired.
 */
export function trackHttp1Requests(server: http.Server, idle: IdleConnections): void {
  const inFlight = new WeakMap<net.Socket, number>();
  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    idle.markBusy(socket);
    res.once("close", () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, left);
      if (left === 0 && !socket.destroyed) idle.markIdle(socket, idleSocket(socket));
    });
  });
  server.on("connection", (socket: net.Socket) => {
    socket.once("close", () => idle.markBusy(socket));
  });
}

/**
 * Closes an HTTP/2 connection that has had no open stream for `idleMs`: GOAWAY, then the
 * session ends (with no stream open, at once). Answering PINGs is not activity: a client
 * that holds connections and calls nothing would otherwise keep a file descriptor and a
 * session each for as long as it likes. Clients reconnect on their next call (GOAWAY is the
 * ordinary way for a server to retire a connection). `onClose` runs when the timeout fires.
 * `idleConnections` is kept told whether the session has a stream open.
 */
export function closeWhenIdle(
  session: http2.ServerHttp2Session,
  idleMs: number,
  onClose: () => void,
  idleConnections?: IdleConnections,
): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const retirable = idleSession(session);
  const arm = () => {
    idleConnections?.markIdle(session, retirable);
    timer = setTimeout(() => {
      if (session.closed || session.destroyed) return;
      onClose();
      session.close();
    }, idleMs);
  };
  // One listener for the session's streams, not a closure per stream (an idle one keeps it
  // for hours); `on`, not `once`: a stream emits 'close' once, and once() wraps each listener
  // in two more objects.
  const streamClosed = () => {
    open--;
    if (open === 0 && !session.closed && !session.destroyed) arm();
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    idleConnections?.markBusy(session);
    stream.on("close", streamClosed);
  });
  session.once("close", () => {
    clearTimeout(timer);
    idleConnections?.markBusy(session);
  });
  arm();
}
