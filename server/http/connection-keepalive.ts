import type http2 from "node:http2";
import type net from "node:net";

/**
 * Detects clients that vanished without closing (a crashed host, a dropped network): such a
 * connection never errors by itself, and its subscriptions would stay registered for ever.
 * HTTP/2 connections are pinged every `intervalMs`; one whose previous ping is still
 * unanswered at the next tick is destroyed, which ends its streams and frees them.
 */
export function keepSessionAlive(session: http2.ServerHttp2Session, intervalMs: number): void {
  let awaitingPong = false;
  const timer = setInterval(() => {
    if (session.destroyed || session.closed) return clearInterval(timer);
    if (awaitingPong) {
      session.destroy();
      return clearInterval(timer);
    }
    awaitingPong = true;
    try {
      session.ping((err) => {
        if (!err) awaitingPong = false;
      });
    } catch {
      session.destroy(); // the session is already unusable
      clearInterval(timer);
    }
  }, intervalMs);
  timer.unref();
  session.once("close", () => clearInterval(timer));
}

/** HTTP/1.1 has no ping: TCP keepalive probes find dead peers instead (more slowly). */
export function keepSocketAlive(socket: net.Socket, intervalMs: number): void {
  socket.setKeepAlive(true, intervalMs);
}
