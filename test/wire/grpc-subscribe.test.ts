import { once } from "node:events";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { SubscribeRequestSchema, TeamService } from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase, type Protocol, type TeamClient } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { codeName, envelope, H2Client, hasCompleteFrame, judgeGrpc } from "../support/raw-rpc.js";
import { subscribedBeyond, subscriptionsAtMost } from "../support/subscribed.js";

/**
 * gRPC Subscribe is served on the bare HTTP/2 stream (server/grpc/grpc-server-stream.ts),
 * outside connect-node; every other protocol by connect-node. Each behaviour an agent relies on is
 * checked over gRPC, and where it matters, against what connect-node answers.
 */
describeEachDatabase(
  "Subscribe over gRPC (the bare HTTP/2 stream) behaves as through connect-node",
  (env) => {
    /** The first `n` events of a stream, then the stream is cancelled. */
    async function firstEvents(client: TeamClient, n: number, afterSeq?: bigint) {
      const abort = new AbortController();
      const events: string[] = [];
      try {
        for await (const r of client.subscribe(afterSeq === undefined ? {} : { afterSeq }, {
          signal: abort.signal,
        })) {
          events.push(
            r.event.case === "envelope"
              ? `${r.event.value.seq}:${r.event.value.from}:${r.event.value.message?.kind.value}`
              : `heartbeat:${r.event.value?.lastSeq}`,
          );
          if (events.length === n) break;
        }
      } finally {
        abort.abort();
      }
      return events;
    }

    /** How a stream ends: undefined (cleanly) or its error. */
    async function ending(client: TeamClient, afterSeq?: bigint, timeoutMs?: number) {
      try {
        for await (const _ of client.subscribe(
          afterSeq === undefined ? {} : { afterSeq },
          timeoutMs ? { timeoutMs } : {},
        )) {
        }
        return undefined;
      } catch (err) {
        return ConnectError.from(err);
      }
    }

    const describeError = (e: ConnectError | undefined) =>
      e && {
        code: Code[e.code],
        message: e.rawMessage,
        rules: e.findDetails(RuleViolationSchema).map((d) => `${d.rule}:${d.field}`),
      };

    it("delivers the backlog, then live messages, then heartbeats, in order", async () => {
      const t = await env().team("w");
      await t.lead.send({ to: "w", message: text("one") });
      await t.lead.send({ to: "w", message: text("two") });
      const client = env().client(t.member("w").token, "grpc");
      const before = env().app.hub.waiting;
      const live = firstEvents(client, 5, 0n);
      // "three" is sent once the stream is registered: it can only arrive live.
      await subscribedBeyond(env().app, before);
      await t.lead.send({ to: "w", message: text("three") });
      const events = await live;
      // A busy machine may take longer than a heartbeat interval (300 ms) to send "three":
      // heartbeats before it then say the backlog's end, never more.
      const three = events.indexOf("3:team-lead:three");
      expect(
        events.slice(2, three).every((e) => e === "heartbeat:2"),
        events.join(),
      ).toBe(true);
      expect([...events.slice(0, 2), ...events.slice(three, three + 2)]).toEqual([
        "1:team-lead:one",
        "2:team-lead:two",
        "3:team-lead:three",
        "heartbeat:3",
      ]);
      // Without after_seq: from the ack cursor (nothing acked: from the start).
      expect(await firstEvents(client, 1)).toEqual(["1:team-lead:one"]);
    });

    it("refusals are the same as connect-node's: code, message and RuleViolation detail", async () => {
      const t = await env().team("r");
      const over = 9_223_372_036_854_775_808n;
      const cases: [string, (p: Protocol) => Promise<ConnectError | undefined>][] = [
        ["no token", (p) => ending(env().client(undefined, p))],
        ["malformed token", (p) => ending(env().client("tp_short", p))],
        ["unknown token", (p) => ending(env().client(`tp_${"x".repeat(43)}`, p))],
        ["after_seq over 2^63-1", (p) => ending(env().client(t.member("r").token, p), over)],
      ];
      for (const [what, run] of cases) {
        const viaConnect = describeError(await run("connect"));
        expect(viaConnect, what).toBeDefined();
        expect(describeError(await run("grpc")), what).toEqual(viaConnect);
      }
    });

    it("a removed member's stream ends with Unauthenticated; a graceful end is clean", async () => {
      const t = await env().team("gone", "stays");
      const before = env().app.hub.waiting;
      const gone = ending(env().client(t.member("gone").token, "grpc"), 0n);
      await subscribedBeyond(env().app, before);
      await t.lead.removeMember({ name: "gone" });
      const err = await gone;
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toMatch(/removed by the lead/);
    });

    it("a client that cancels (RST_STREAM) releases its subscription; the server carries on", async () => {
      const t = await env().team("quits");
      const before = env().app.hub.size;
      const client = env().client(t.member("quits").token, "grpc");
      const abort = new AbortController();
      const stream = client.subscribe({ afterSeq: 0n }, { signal: abort.signal });
      const it = stream[Symbol.asyncIterator]();
      await t.lead.send({ to: "quits", message: text("hello") });
      expect((await it.next()).done).toBe(false);
      expect(env().app.hub.size).toBe(before + 1);
      abort.abort();
      await it.next().catch(() => undefined);
      await subscriptionsAtMost(env().app, before); // released: the test times out otherwise
      expect(await firstEvents(client, 1, 0n)).toEqual(["1:team-lead:hello"]);
    });

    it("clients that reset mid-request or mid-stream leave the server serving", async () => {
      const t = await env().team("flaky");
      const session = http2.connect(env().server.url);
      session.on("error", () => {});
      await once(session, "connect"); // a PING sent before is cancelled, not sent
      /**
       * A PING round trip: the server's HTTP/2 layer answers a PING after the frames sent
       * before it, so once the answer is here the server has read them (data, resets).
       */
      const pingPong = () =>
        new Promise<void>((resolve, reject) =>
          session.ping((err) => (err ? reject(err) : resolve())),
        );
      const sizeBefore = env().app.hub.size;
      try {
        const open = () => {
          const s = session.request({
            ":method": "POST",
            ":path": `/${TeamService.typeName}/Subscribe`,
            "content-type": "application/grpc",
            te: "trailers",
            authorization: `Bearer ${t.member("flaky").token}`,
          });
          s.on("error", () => {});
          return s;
        };
        const request = toBinary(
          SubscribeRequestSchema,
          create(SubscribeRequestSchema, { afterSeq: 0n }),
        );
        // Half a request, read by the server, then a reset.
        const half = open();
        half.write(envelope(0, request).subarray(0, 3));
        await pingPong();
        half.close(http2.constants.NGHTTP2_CANCEL);
        // A whole request, a reset once the stream is live (parked, waiting for messages).
        const waitingBefore = env().app.hub.waiting;
        const live = open();
        live.end(envelope(0, request));
        await subscribedBeyond(env().app, waitingBefore);
        expect(env().app.hub.size).toBe(sizeBefore + 1);
        live.close(http2.constants.NGHTTP2_CANCEL);
        // A reset before anything was sent.
        open().close(http2.constants.NGHTTP2_CANCEL);
        await pingPong(); // the server has read every reset
        // The live stream's subscription is released: the test times out otherwise.
        await subscriptionsAtMost(env().app, sizeBefore);
      } finally {
        session.close();
      }
      await t.lead.send({ to: "flaky", message: text("still here") });
      const client = env().client(t.member("flaky").token, "grpc");
      expect(await firstEvents(client, 1, 0n)).toEqual(["1:team-lead:still here"]);
    });

    it("grpc-timeout ends the stream with DeadlineExceeded", async () => {
      const t = await env().team("late");
      const err = await ending(env().client(t.member("late").token, "grpc"), 0n, 300);
      expect(err?.code).toBe(Code.DeadlineExceeded);
    });

    it("hand-made requests: gzip works; bad framing, a compressed flag without grpc-encoding and an oversized request are refused with typed errors", async () => {
      const t = await env().team("raw");
      await t.lead.send({ to: "raw", message: text("hello") });
      const h2 = new H2Client(env().server.url);
      try {
        const call = async (body: Buffer, extra: Record<string, string> = {}) => {
          const o = await h2.request({
            path: `/${TeamService.typeName}/Subscribe`,
            headers: {
              "content-type": "application/grpc",
              te: "trailers",
              authorization: `Bearer ${t.member("raw").token}`,
              ...extra,
            },
            body,
            timeoutMs: 10_000,
            enough: hasCompleteFrame,
          });
          if (o.kind !== "response") throw new Error(o.reason);
          const v = judgeGrpc(o);
          return v.kind === "error"
            ? codeName(v.code)
            : v.kind === "success"
              ? `${v.messages.length} message(s)`
              : v.kind;
        };
        const request = toBinary(
          SubscribeRequestSchema,
          create(SubscribeRequestSchema, { afterSeq: 0n }),
        );
        expect(await call(envelope(0, request))).toBe("1 message(s)");
        expect(await call(envelope(1, gzipSync(request)), { "grpc-encoding": "gzip" })).toBe(
          "1 message(s)",
        );
        expect(await call(envelope(1, request))).toBe("invalid_argument");
        expect(await call(envelope(1, Buffer.from("not gzip")), { "grpc-encoding": "gzip" })).toBe(
          "invalid_argument",
        );
        // What connect answers a server stream sent two messages (its ensureSingle).
        expect(await call(Buffer.concat([envelope(0, request), envelope(0, request)]))).toBe(
          "unimplemented",
        );
        expect(await call(envelope(0, request).subarray(0, 3))).toBe("invalid_argument");
        expect(await call(envelope(0, Buffer.from([0x08])))).toBe("invalid_argument");
        // Over readMaxBytes (1 MiB), refused from the envelope's length, before the body.
        expect(await call(envelope(0, Buffer.alloc(16), 2 * 1024 * 1024))).toBe(
          "resource_exhausted",
        );
        // The connection is still good for more.
        expect(await call(envelope(0, request))).toBe("1 message(s)");
      } finally {
        h2.close();
      }
    });
  },
  { heartbeatIntervalMs: 300 },
);
