import net from "node:net";

export interface TcpProxy {
  /** The proxy's own port, and http://127.0.0.1:<port>. */
  readonly port: number;
  readonly url: string;
  /**
   * Stops passing bytes on every connection, without closing anything: to the server the
   * client looks like a host that stopped reading ("to-client") or vanished ("both").
   */
  stall(direction: "to-client" | "both"): void;
  /** An outage: drops every connection and resets new ones until restore(). */
  cut(): Promise<void>;
  /** Ends an outage (and a stall): new connections pass again. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of a local port, for tests that need a peer to go silent (a stalled
 * or vanished client) or a dependency to become unreachable (a database outage).
 */
export async function startTcpProxy(
  target: number | { host: string; port: number },
): Promise<TcpProxy> {
  const { host, port: targetPort } =
    typeof target === "number" ? { host: "127.0.0.1", port: target } : target;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let stalled: "to-client" | "both" | undefined;
  let down = false;

  const dropAll = () => {
    for (const p of pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    pairs.clear();
  };

  const server = net.createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(targetPort, host);
    const pair = { client, upstream };
    pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket, dir: "to-client" | "to-server") => {
      from.on("data", (chunk) => {
        if (stalled === "both" || (stalled === "to-client" && dir === "to-client")) return;
        to.write(chunk);
      });
    };
    forward(upstream, client, "to-client");
    forward(client, upstream, "to-server");
    const end = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    stall(direction) {
      stalled = direction;
      // Stop reading from the target too, so its socket buffer fills and its writes block,
      // as they would towards a peer that reads nothing.
      for (const p of pairs) p.upstream.pause();
    },
    async cut() {
      down = true;
      dropAll();
    },
    async restore() {
      down = false;
      stalled = undefined;
      for (const p of pairs) p.upstream.resume();
    },
    async close() {
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
