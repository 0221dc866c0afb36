import http from "node:http";
import http2 from "node:http2";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { pino } from "pino";
import { expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { startServer } from "../../server/http/http-server.js";
import { describeEachDatabase, type Protocol, transportFor } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { envelope, h1Request, judgeConnectStream, type RawRequest } from "../support/raw-rpc.js";

/**
 * Answers sent before the request body is in (server/http/oversized-request-bodies.ts): the
 * server refuses a message over 1 MiB as soon as it has read its length, and an error in
 * the first of several messages at once; the rest of the body is read and dropped, so that
 * the answer reaches the client and the connection stays usable.
 */
describeEachDatabase("answers sent before the request body is in", (env) => {
  const protocols: Protocol[] = ["grpc", "connect", "connect-h1", "grpc-web"];
  for (const protocol of protocols) {
    it(`${protocol}: oversized messages are refused with ResourceExhausted, and the same client keeps working`, async () => {
      const team = await env().team("worker");
      const worker = env().client(team.member("worker").token, protocol);
      const big = text("o".repeat(1_100_000));
      for (let i = 0; i < 12; i++) {
        const err = await worker.send({ to: "team-lead", message: big }).then(
          () => undefined,
          (e) => ConnectError.from(e),
        );
        expect(err?.code, `oversized send ${i}: ${err?.message}`).toBe(Code.ResourceExhausted);
      }
      const sent = await worker.send({ to: "team-lead", message: text("small") });
      expect(sent.seq).toBeGreaterThan(0n);
    });
  }

  /**
   * HTTP/2: a body that is never finished, whose first bytes already say it is too long. The
   * server holds Connect and gRPC-Web bodies until they end (server/http/held-bodies.ts), but
   * not these: the refusal comes without the end (REQUEST_TIMEOUT_MS here is the default 60 s).
   */
  async function refusedBeforeTheEnd(headers: http2.OutgoingHttpHeaders, first: Buffer) {
    const team = await env().team();
    const session = http2.connect(env().server.url);
    session.on("error", () => {});
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": `/${TeamService.typeName}/Send`,
        authorization: `Bearer ${team.leadToken}`,
        ...headers,
      });
      stream.on("error", () => {});
      stream.write(first);
      let answer: http2.IncomingHttpHeaders = {};
      let body = "";
      stream.on("response", (h) => {
        answer = h;
      });
      stream.setEncoding("latin1").on("data", (d: string) => {
        body += d;
      });
      await new Promise<void>((resolve) => {
        stream.once("end", resolve);
        stream.once("close", resolve);
      });
      return { headers: answer, body };
    } finally {
      session.destroy();
    }
  }

  it("HTTP/2, gRPC-Web: a first message announcing more than 1 MiB is refused as soon as its length is in", async () => {
    const r = await refusedBeforeTheEnd(
      { "content-type": "application/grpc-web+proto" },
      envelope(0, Buffer.alloc(10), 2 * 1024 * 1024),
    );
    expect(r.headers[":status"]).toBe(200);
    const status = r.headers["grpc-status"] ?? /grpc-status: ?(\d+)/.exec(r.body)?.[1];
    expect(status).toBe(String(Code.ResourceExhausted));
  });

  it("HTTP/2, Connect: a content-length over 1 MiB is refused at once, and so is a body past 1 MiB", async () => {
    const declared = await refusedBeforeTheEnd(
      { "content-type": "application/proto", "content-length": String(2 * 1024 * 1024) },
      Buffer.of(0x0a),
    );
    const long = await refusedBeforeTheEnd(
      { "content-type": "application/json" },
      Buffer.alloc(1024 * 1024 + 10, 0x20),
    );
    for (const r of [declared, long]) {
      expect(JSON.parse(r.body)).toMatchObject({ code: "resource_exhausted" });
    }
  });

  it("HTTP/2: a refused call does not hold up a graceful stop (its request stream used to stay open until the grace ran out)", async () => {
    const team = await env().team("worker");
    const events: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => events.push(line) });
    const server = await startServer({
      handler: env().app.nodeHandler(),
      rawStreams: env().app.rawStreams(),
      wholeBodies: env().app.wholeBodies(),
      host: "127.0.0.1",
      port: 0,
      logger,
    });
    let err: ConnectError | undefined;
    try {
      const worker = createClient(
        TeamService,
        transportFor(server.url, "grpc", team.member("worker").token),
      );
      // Over the 2 MiB stream window: connect-es is still sending when its answer comes,
      // and then never ends the stream.
      err = await worker
        .send({ to: "team-lead", message: text("o".repeat(3_000_000)) })
        .then(() => undefined, ConnectError.from);
    } finally {
      await server.close(5_000);
    }
    expect(err?.code).toBe(Code.ResourceExhausted);
    // The stream was closed, not left open: a stop that had to force it logs this event.
    expect(events.join("")).not.toMatch(/stop_grace_exceeded/);
  });

  it("HTTP/1.1: an error sent while 900 KB of the body are still on their way arrives whole, and the keep-alive connection is reused", async () => {
    // The first message's error quotes the offending value (900 KB here), capped to 1 KiB
    // (test/wire/connect-error-echo.test.ts), while the second message is still on its way. The
    // server used to close the connection with it unread: the client's writes failed and it
    // dropped the response half-read ("response aborted").
    const team = await env().team();
    const huge = Buffer.from(JSON.stringify({ afterSeq: "h".repeat(900_000) }));
    const request: RawRequest = {
      path: `/${TeamService.typeName}/Subscribe`,
      headers: {
        "content-type": "application/connect+json",
        "connect-protocol-version": "1",
        authorization: `Bearer ${team.leadToken}`,
      },
      body: Buffer.concat([envelope(0, huge), envelope(0, huge)]),
      timeoutMs: 10_000,
    };
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let connections = 0;
    const connect = agent.createConnection.bind(agent);
    agent.createConnection = (...args: Parameters<typeof connect>) => {
      connections++;
      return connect(...args);
    };
    try {
      const vias: (http.Agent | false)[] = [false, false, agent, agent, agent];
      for (const [i, via] of vias.entries()) {
        const o = await h1Request(env().server.url, via, request);
        expect(o.kind, `call ${i}: ${o.kind === "transport-failure" ? o.reason : ""}`).toBe(
          "response",
        );
        if (o.kind !== "response") continue;
        const v = judgeConnectStream(o);
        expect(v.kind === "error" ? v.code : v.kind, `call ${i}`).toBe(Code.InvalidArgument);
        expect(v.kind === "error" && v.message, `call ${i}`).toMatch(/after_seq.*\(truncated\)$/);
      }
      expect(connections).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});
