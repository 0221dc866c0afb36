import http2 from "node:http2";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { type RunningServer, startServer } from "../../server/http/http-server.js";
import { silentLogger } from "../../server/logger.js";
import { describeEachDatabase } from "../support/harness.js";
import { envelope } from "../support/raw-rpc.js";

/**
 * HTTP/2 request bodies that never finish (HEADERS, a few bytes, no END_STREAM) are ended at
 * REQUEST_TIMEOUT_MS on every protocol, as HTTP/1.1's are with 408
 * (test/wire/http-timeouts.test.ts): without it, each held its stream for as long as the
 * client liked, and these tests would wait for ever.
 */
describeEachDatabase("HTTP/2 request bodies that never finish", (env) => {
  let server: RunningServer;
  /** The same server with the default REQUEST_TIMEOUT_MS: a body may take its time. */
  let patient: RunningServer;
  let token: string;
  /** The requests each server started its Node handler (and so connect's handler) for. */
  const entered = new Map<RunningServer, string[]>();
  async function countingServer(timeouts: {
    requestTimeoutMs?: number;
    headersTimeoutMs?: number;
  }) {
    const handler = env().app.nodeHandler();
    const mine: string[] = [];
    const started = await startServer({
      handler: (req, res) => {
        mine.push(`${req.headers["content-type"]} ${req.url}`);
        handler(req, res);
      },
      rawStreams: env().app.rawStreams(),
      wholeBodies: env().app.wholeBodies(),
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      metrics: env().app.metrics,
      ...timeouts,
    });
    entered.set(started, mine);
    return started;
  }
  beforeAll(async () => {
    server = await countingServer({ requestTimeoutMs: 300, headersTimeoutMs: 300 });
    patient = await countingServer({});
    token = (await env().team()).leadToken;
  });
  afterAll(async () => {
    await server.close(1_000);
    await patient.close(1_000);
  });

  /**
   * Sends headers and a first piece of body, then `rest` with the end once the first has
   * been taken in (never, without `rest`); what came back, and how.
   */
  async function unfinished(
    path: string,
    contentType: string,
    first: Buffer,
    rest?: Buffer,
    to: RunningServer = server,
  ) {
    const session = http2.connect(to.url);
    session.on("error", () => {});
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": contentType,
        authorization: `Bearer ${token}`,
      });
      stream.on("error", () => {});
      stream.write(first, () => {
        if (rest) setTimeout(() => stream.end(rest), 50);
      });
      let headers: http2.IncomingHttpHeaders = {};
      let body = "";
      stream.on("response", (h) => {
        headers = h;
      });
      stream.setEncoding("utf8").on("data", (d: string) => {
        body += d;
      });
      await new Promise<void>((resolve) => stream.once("close", () => resolve()));
      return { headers, body, rstCode: stream.rstCode };
    } finally {
      session.destroy();
    }
  }

  const message = /request body not finished within REQUEST_TIMEOUT_MS/;
  const listMembers = `/${TeamService.typeName}/ListMembers`;
  const subscribe = `/${TeamService.typeName}/Subscribe`;
  // A message header announcing 10 bytes, and 1 of them.
  const partial = Buffer.concat([envelope(0, Buffer.alloc(10)).subarray(0, 5), Buffer.of(1)]);

  it("gRPC (unary and Subscribe): DEADLINE_EXCEEDED as trailers-only, then the stream is reset", async () => {
    for (const path of [listMembers, subscribe]) {
      const r = await unfinished(path, "application/grpc+proto", partial);
      expect(r.headers["grpc-status"], path).toBe("4");
      expect(decodeURIComponent(String(r.headers["grpc-message"]))).toMatch(message);
      expect(r.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    }
  });

  it("gRPC-Web over HTTP/2: DEADLINE_EXCEEDED", async () => {
    const r = await unfinished(listMembers, "application/grpc-web+proto", partial);
    expect(r.headers["grpc-status"]).toBe("4");
    expect(decodeURIComponent(String(r.headers["grpc-message"]))).toMatch(message);
  });

  it("Connect unary and streaming over HTTP/2: 408 with a deadline_exceeded error", async () => {
    for (const [path, type, first] of [
      [listMembers, "application/json", Buffer.from("{")],
      [subscribe, "application/connect+json", partial],
    ] as const) {
      const r = await unfinished(path, type, first);
      expect(r.headers[":status"], path).toBe(408);
      expect(JSON.parse(r.body)).toMatchObject({ code: "deadline_exceeded" });
      expect(r.body).toMatch(message);
    }
  });

  it("Connect and gRPC-Web, unary and server-streaming: no handler is started for a body that never ends; the timeout answers it", async () => {
    const mine = entered.get(server) as string[];
    mine.length = 0;
    const cases = [
      [listMembers, "application/json", Buffer.from("{")],
      [listMembers, "application/proto", Buffer.of(0x0a)],
      [listMembers, "application/grpc-web+proto", partial],
      [subscribe, "application/connect+json", partial],
      [subscribe, "application/grpc-web+proto", partial],
    ] as const;
    const answers = await Promise.all(
      cases.map(([path, type, first]) => unfinished(path, type, first)),
    );
    for (const [i, r] of answers.entries()) {
      const [path, type] = cases[i] as (typeof cases)[number];
      if (type.startsWith("application/grpc-web")) {
        expect(r.headers["grpc-status"], `${type} ${path}`).toBe("4");
        expect(decodeURIComponent(String(r.headers["grpc-message"]))).toMatch(message);
      } else {
        expect(r.headers[":status"], `${type} ${path}`).toBe(408);
        expect(r.body).toMatch(message);
      }
      expect(r.rstCode, `${type} ${path}`).toBe(http2.constants.NGHTTP2_NO_ERROR);
    }
    expect(mine).toEqual([]);
  });

  it("a held body that ends later is handed whole to its handler, once", async () => {
    const mine = entered.get(patient) as string[];
    mine.length = 0;
    const request = envelope(0, Buffer.from("{}"));
    const [connect, grpcWeb] = await Promise.all([
      unfinished(listMembers, "application/json", Buffer.from("{"), Buffer.from("}"), patient),
      unfinished(
        listMembers,
        "application/grpc-web+json",
        request.subarray(0, 3),
        request.subarray(3),
        patient,
      ),
    ]);
    expect(connect.headers[":status"]).toBe(200);
    expect(JSON.parse(connect.body)).toMatchObject({ members: [{ name: "team-lead" }] });
    expect(grpcWeb.headers[":status"]).toBe(200);
    expect(grpcWeb.body).toMatch(/"team-lead"/);
    expect(grpcWeb.body).toMatch(/grpc-status: ?0/);
    expect(mine.sort()).toEqual([
      `application/grpc-web+json ${listMembers}`,
      `application/json ${listMembers}`,
    ]);
  });

  it("/mcp over HTTP/2: 408", async () => {
    const r = await unfinished("/mcp", "application/json", Buffer.from('{"jsonrpc":'));
    expect(r.headers[":status"]).toBe(408);
    expect(r.body).toMatch(message);
  });

  it("a Subscribe whose body finished stays open past the timeout (it bounds the body, not the call)", async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const stream = session.request({
      ":method": "POST",
      ":path": subscribe,
      "content-type": "application/connect+json",
      authorization: `Bearer ${token}`,
    });
    stream.end(envelope(0, Buffer.from("{}")));
    stream.resume();
    let closed = false;
    stream.once("close", () => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 900));
    session.destroy();
    expect(closed).toBe(false);
  });
});
