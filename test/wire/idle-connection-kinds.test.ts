import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../server/http/http-server.js";
import { silentLogger } from "../../server/logger.js";
import { createMetrics, type Metrics } from "../../server/metrics/metrics.js";

async function refusals(metrics: Metrics, rule: string): Promise<number> {
  const text = await metrics.registry.getSingleMetricAsString("team_refusals_total");
  const line = text.split("\n").find((l) => l.includes(`rule="${rule}"`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

/** A fresh HTTP/2 call's answer (its connection closed after). */
async function freshCall(url: string): Promise<string> {
  const session = http2.connect(url);
  session.on("error", () => {});
  const stream = session.request({ ":path": "/" });
  stream.end();
  try {
    return await new Promise<string>((resolve, reject) => {
      let t = "";
      stream.setEncoding("utf8").on("data", (d: string) => {
        t += d;
      });
      stream.on("end", () => resolve(t));
      stream.on("error", reject);
      session.once("close", () => reject(new Error("closed before the answer")));
    });
  } finally {
    session.close();
  }
}

/** A TCP connection the server has accepted (a round trip through the kernel is not enough). */
async function silent(port: number): Promise<net.Socket> {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  await new Promise((r) => setTimeout(r, 30));
  return socket;
}

/** An HTTP/1.1 keep-alive connection that made one request, was answered, and went quiet. */
async function keptAlive(port: number): Promise<net.Socket> {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
  await new Promise<void>((resolve) => {
    let text = "";
    const onData = (d: Buffer) => {
      text += d.toString();
      if (text.includes("\r\n\r\nok")) {
        socket.off("data", onData);
        resolve();
      }
    };
    socket.on("data", onData);
  });
  return socket;
}

const closed = (socket: net.Socket) =>
  new Promise<void>((resolve) => {
    if (socket.destroyed) resolve();
    else socket.once("close", () => resolve());
  });

describe("MAX_CONNECTIONS: connections that never spoke and idle HTTP/1.1 keep-alive ones make way too", () => {
  let server: RunningServer;
  const metrics = createMetrics();
  beforeAll(async () => {
    server = await startServer({
      handler: (req, res) => {
        req.resume();
        req.on("end", () => res.end("ok"));
      },
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      metrics,
      // Long enough that no timeout closes anything here: only eviction does.
      headersTimeoutMs: 60_000,
      requestTimeoutMs: 60_000,
      idleConnectionTimeoutMs: 60_000,
      maxConnections: 4,
    });
  });
  afterAll(async () => {
    await server.close(1_000);
  });

  // Without eviction of these kinds the fresh call's connection was refused at accept.
  it("with the cap filled by silent TCP connections, a fresh call is answered and the oldest silent one is closed", async () => {
    const before = await refusals(metrics, "max-connections-evicted");
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await silent(server.port));
    expect(await freshCall(server.url)).toBe("ok");
    await closed(held[0] as net.Socket);
    expect(held.slice(1).every((s) => !s.destroyed)).toBe(true);
    expect(await refusals(metrics, "max-connections-evicted")).toBe(before + 1);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 100));
  });

  it("with the cap filled by idle HTTP/1.1 keep-alive connections, a fresh call is answered and the longest-idle one is closed", async () => {
    const before = await refusals(metrics, "max-connections-evicted");
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await keptAlive(server.port));
    expect(await freshCall(server.url)).toBe("ok");
    await closed(held[0] as net.Socket);
    expect(held.slice(1).every((s) => !s.destroyed)).toBe(true);
    expect(await refusals(metrics, "max-connections-evicted")).toBe(before + 1);
    for (const s of held) s.destroy();
  });
});
