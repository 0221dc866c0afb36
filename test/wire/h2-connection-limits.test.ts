import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../server/http/http-server.js";
import { silentLogger } from "../../server/logger.js";
import { createMetrics, type Metrics } from "../../server/metrics/metrics.js";

/** How many refusals of `rule` the metrics counted. */
async function refusals(metrics: Metrics, rule: string): Promise<number> {
  const text = await metrics.registry.getSingleMetricAsString("team_refusals_total");
  const line = text.split("\n").find((l) => l.includes(`rule="${rule}"`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

/** A session's end: whether a GOAWAY came first. */
function ending(session: http2.ClientHttp2Session) {
  let goaway = false;
  session.on("goaway", () => {
    goaway = true;
  });
  session.on("error", () => {});
  return new Promise<{ goaway: boolean }>((resolve) =>
    session.once("close", () => resolve({ goaway })),
  );
}

describe("HTTP/2 connections: idle ones are closed, and their number is capped", () => {
  let server: RunningServer;
  const metrics = createMetrics();
  let release: (() => void) | undefined;
  beforeAll(async () => {
    server = await startServer({
      // /hold answers when the test says so; the rest at once.
      handler: (req, res) => {
        if (req.url === "/hold") {
          release = () => res.end("held");
          return;
        }
        req.resume();
        req.on("end", () => res.end("ok"));
      },
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      metrics,
      // PINGs go both ways often: they must not count as activity.
      keepaliveIntervalMs: 50,
      idleConnectionTimeoutMs: 400,
      maxConnections: 4,
    });
  });
  afterAll(async () => {
    await server.close(1_000);
  });

  // Without the idle timeout these two would wait for ever (and fail on the test timeout).
  it("a connection that only answers PINGs is sent GOAWAY and closed after IDLE_CONNECTION_TIMEOUT_MS", async () => {
    const before = await refusals(metrics, "idle-connection");
    const session = http2.connect(server.url);
    const ended = ending(session);
    // Our side pings too: a client's PINGs are not activity either.
    // Not once the server destroyed the session: ping() then throws, and the timer may fire
    // between the close and `ended` resolving.
    const pinging = setInterval(() => {
      if (!session.destroyed && !session.closed) session.ping(() => {});
    }, 50);
    const end = await ended;
    clearInterval(pinging);
    expect(end.goaway).toBe(true);
    expect(await refusals(metrics, "idle-connection")).toBe(before + 1);
  });

  it("a connection with a stream open is not idle; it is closed only once the stream ended and the timeout passed again", async () => {
    const session = http2.connect(server.url);
    const ended = ending(session);
    let closed = false;
    void ended.then(() => {
      closed = true;
    });
    const stream = session.request({ ":path": "/hold" });
    stream.on("error", () => {});
    const body = new Promise<string>((resolve) => {
      let text = "";
      stream.setEncoding("utf8").on("data", (d: string) => {
        text += d;
      });
      stream.on("end", () => resolve(text));
    });
    // Well past the idle timeout, the stream still open: the connection is still there.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(closed).toBe(false);
    release?.();
    expect(await body).toBe("held");
    expect((await ended).goaway).toBe(true);
  });
});

/** One answered call on a fresh connection: the body of POST / ("ok"). */
async function freshCall(url: string): Promise<string> {
  const session = http2.connect(url);
  session.on("error", () => {});
  const stream = session.request({ ":path": "/", ":method": "POST" });
  stream.end("x");
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

/** An HTTP/2 connection the server has taken as a session (its SETTINGS arrived). */
async function connected(url: string): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(url);
  session.on("error", () => {});
  await new Promise<void>((resolve) => session.once("connect", () => resolve()));
  // The server's session exists once our SETTINGS were acknowledged: a PING round trip.
  await new Promise<void>((resolve) => session.ping(() => resolve()));
  return session;
}

describe("HTTP/2 connections at MAX_CONNECTIONS: an idle one makes way, a busy one does not", () => {
  let server: RunningServer;
  const metrics = createMetrics();
  const releases: (() => void)[] = [];
  beforeAll(async () => {
    server = await startServer({
      handler: (req, res) => {
        if (req.url === "/hold") {
          releases.push(() => res.end("held"));
          return;
        }
        req.resume();
        req.on("end", () => res.end("ok"));
      },
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      metrics,
      // Long enough that the idle timeout closes nothing here: only eviction does.
      idleConnectionTimeoutMs: 60_000,
      maxConnections: 4,
    });
  });
  afterAll(async () => {
    for (const release of releases) release();
    await server.close(1_000);
  });

  it("with the cap filled by idle connections, a fresh call is answered and the longest-idle one got GOAWAY", async () => {
    const before = await refusals(metrics, "max-connections-evicted");
    const idle: http2.ClientHttp2Session[] = [];
    const endings: Promise<{ goaway: boolean }>[] = [];
    for (let i = 0; i < 4; i++) {
      const session = await connected(server.url);
      endings.push(ending(session));
      idle.push(session);
    }
    let firstEnded = false;
    void endings[0]?.then(() => {
      firstEnded = true;
    });
    expect(await freshCall(server.url)).toBe("ok");
    expect((await endings[0])?.goaway).toBe(true);
    expect(firstEnded).toBe(true);
    expect(idle.slice(1).every((s) => !s.closed && !s.destroyed)).toBe(true);
    expect(await refusals(metrics, "max-connections-evicted")).toBe(before + 1);
    for (const s of idle) s.destroy();
    await Promise.all(endings);
  });

  it("with the cap filled by connections that each hold an open stream, a new one is refused at accept", async () => {
    // Let the previous case's connections be gone from the server's count.
    await new Promise((r) => setTimeout(r, 100));
    const before = await refusals(metrics, "max-connections");
    const busy: http2.ClientHttp2Session[] = [];
    for (let i = 0; i < 4; i++) {
      const session = await connected(server.url);
      const stream = session.request({ ":path": "/hold" });
      stream.on("error", () => {});
      busy.push(session);
    }
    // Each server session has its stream once four handlers are holding one.
    while (releases.length < 4) await new Promise((r) => setTimeout(r, 10));
    const refused = net.connect(server.port, "127.0.0.1");
    refused.on("error", () => {});
    await new Promise<void>((resolve) => refused.once("close", () => resolve()));
    expect(await refusals(metrics, "max-connections")).toBe(before + 1);
    expect(busy.every((s) => !s.closed && !s.destroyed)).toBe(true);
    for (const s of busy) s.destroy();
  });
});
