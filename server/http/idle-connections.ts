import type http2 from "node:http2";

/**
 * Closes an HTTP/2 connection that has had no open stream for `idleMs`: GOAWAY, then the
 * session ends (with no stream open, at once). Answering PINGs is not activity: a client
 * that holds connections and calls nothing would otherwise keep a file descriptor and a
 * session each for as long as it likes. Clients reconnect on their next call (GOAWAY is the
 * ordinary way for a server to retire a connection). `onClose` runs when the timeout fires.
 */
export function closeWhenIdle(
  session: http2.ServerHttp2Session,
  idleMs: number,
  onClose: () => void,
): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      if (session.closed || session.destroyed) return;
      onClose();
      session.close();
    }, idleMs);
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      open--;
      if (open === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}
