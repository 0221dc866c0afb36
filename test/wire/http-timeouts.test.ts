import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../server/http/http-server.js";
import { silentLogger } from "../../server/logger.js";

/** A raw TCP client: what it is sent, and when the server hangs up. */
function rawConnection(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  let received = "";
  socket.setEncoding("latin1").on("data", (d: string) => {
    received += d;
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const connected = new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return { socket, closed, connected, received: () => received };
}

describe("HTTP timeouts, before and after the protocol is known", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      // Answers once the whole request is in, as a unary RPC does.
      handler: (req, res) => {
        req.on("end", () => res.end("ok"));
        req.resume();
      },
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      headersTimeoutMs: 300,
      requestTimeoutMs: 600,
    });
  });
  afterAll(async () => {
    await server.close(1_000);
  });

  // Each test ends when the server hangs up; without the timeout it would hang (and fail).
  it("a connection that never says anything is closed (the protocol is never known)", async () => {
    const c = rawConnection(server.port);
    await c.connected;
    await c.closed;
    expect(c.received()).toBe("");
  });

  it("HTTP/1.1 headers trickled and never finished are cut with 408", async () => {
    const c = rawConnection(server.port);
    await c.connected;
    c.socket.write("POST /team.v1.TeamService/ListMembers HTTP/1.1\r\nHost: x\r\n");
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it("an HTTP/1.1 body that never arrives is cut with 408", async () => {
    const c = rawConnection(server.port);
    await c.connected;
    c.socket.write(
      "POST /team.v1.TeamService/ListMembers HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",
    );
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it("a prompt HTTP/1.1 request is answered as before", async () => {
    const c = rawConnection(server.port);
    await c.connected;
    c.socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 200[\s\S]*ok$/);
  });
});
