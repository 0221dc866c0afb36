import { randomBytes } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import type { Database, Queryable } from "../../server/store/database.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { grpcJsClient, grpcStatusName } from "../support/grpc-js-client.js";
import { type Protocol, startTestEnv, type TestEnv, transportFor } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { startTcpProxy } from "../support/tcp-proxy.js";
import { waitFor } from "../support/wait.js";

/** The server's log lines at warn and above, parsed (the slow-consumer cut is one). */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** A Subscribe stream read to its end in the background, whatever the client library. */
type CutSeen = { code: string; message: string };

interface CutReader {
  /** The first event (a heartbeat or an envelope) arrived. */
  firstEvent: Promise<void>;
  /** How the stream ended, in the library's own words (code name and message). */
  ended: Promise<CutSeen | "clean end">;
  close(): void;
}

function grpcJsReader(url: string, token: string): CutReader {
  const client = grpcJsClient(new URL(url).host, token);
  const stream = client.subscribe(0n);
  const firstEvent = new Promise<void>((resolve) => stream.once("data", () => resolve()));
  stream.on("data", () => {}); // keep reading
  const ended = new Promise<CutSeen | "clean end">((resolve) => {
    stream.on("error", () => {}); // the status event reports it
    stream.on("status", (s: { code: number; details: string }) =>
      resolve(s.code === 0 ? "clean end" : { code: grpcStatusName(s.code), message: s.details }),
    );
  });
  return { firstEvent, ended, close: () => client.close() };
}

function connectReader(protocol: Protocol) {
  return (url: string, token: string): CutReader => {
    const client = createClient(TeamService, transportFor(url, protocol, token));
    const abort = new AbortController();
    let first: () => void = () => {};
    const firstEvent = new Promise<void>((resolve) => {
      first = resolve;
    });
    const ended = (async () => {
      try {
        for await (const _ of client.subscribe({ afterSeq: 0n }, { signal: abort.signal })) first();
        return "clean end" as const;
      } catch (err) {
        const ce = ConnectError.from(err);
        return { code: Code[ce.code], message: ce.rawMessage };
      }
    })();
    return { firstEvent, ended, close: () => abort.abort() };
  };
}

/**
 * The real database, with a count of the inbox rows its reads returned for one recipient:
 * what a subscription took out of the database. Nothing is faked: every statement runs.
 */
function countingInboxReads(db: Database, recipient: () => string | undefined) {
  const reads: { rows: number; bytes: number }[] = [];
  const count = (rows: unknown[]) => {
    const mine = (rows as { to_name?: string; body?: Uint8Array }[]).filter(
      (r) => r.body instanceof Uint8Array && r.to_name !== undefined && r.to_name === recipient(),
    );
    if (mine.length > 0) {
      reads.push({ rows: mine.length, bytes: mine.reduce((n, r) => n + (r.body?.length ?? 0), 0) });
    }
  };
  const wrap = <Q extends Queryable>(q: Q): Q => ({
    ...q,
    async query<R extends object>(sql: string, params?: unknown[]) {
      const rows = await q.query<R>(sql, params);
      count(rows);
      return rows;
    },
  });
  const counted: Database = {
    ...db,
    kind: db.kind,
    query: (sql, params) => wrap(db).query(sql, params),
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    ping: () => db.ping(),
    close: () => db.close(),
  };
  if (db.listen) counted.listen = db.listen.bind(db);
  return { db: counted, reads };
}

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`slow and vanished consumers [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };

    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
    });
    afterEach(async () => {
      await env?.close();
    });
    afterAll(async () => {
      await testDb?.dispose();
    });

    /** Each test gets its own server, so that only the mechanism under test can cut. */
    const serve = async (
      options: { slowConsumerTimeoutMs: number; keepaliveIntervalMs: number },
      db: Database = testDb.db,
    ) => {
      const log = capturedLogger();
      // No send-rate limit: the lead floods two inboxes as fast as it can.
      env = await startTestEnv(
        kind,
        { ...testDb, db },
        // No back-off after a cut: these cases resume at once to show nothing is lost (the
        // back-off itself is test/wire/slow-consumer-backoff.test.ts's).
        {
          heartbeatIntervalMs: 100,
          sendRate: { perSecond: 0, burst: 1 },
          slowConsumerBackoffMs: 0,
        },
        { ...options, logger: log.logger },
      );
      return log.lines;
    };

    it("a subscriber that stops reading is cut with a resumable error; others are unaffected; resuming loses nothing", async () => {
      // Keepalive pings are an hour apart: only the slow-consumer guard can cut.
      const logged = await serve({ slowConsumerTimeoutMs: 500, keepaliveIntervalMs: 3_600_000 });
      const t = await env.team("slow", "fast");
      const proxy = await startTcpProxy(env.server.port);
      try {
        const slowClient = createClient(
          TeamService,
          transportFor(proxy.url, "grpc", t.member("slow").token),
        );
        const slow = slowClient.subscribe({ afterSeq: 0n })[Symbol.asyncIterator]();
        expect((await slow.next()).done).toBe(false); // a heartbeat: the stream is open
        proxy.stall("to-client"); // from now on the slow client reads nothing

        // 250 x 64 KiB = 16 MiB: more than the flow-control windows and the socket buffers
        // between the server and the stalled client can absorb.
        const total = 250;
        // Random text: responses are compressed, and repeated letters would shrink to nothing.
        const body = randomBytes(48 * 1024 - 16).toString("base64");
        const fastSeen: bigint[] = [];
        const abortFast = new AbortController();
        const fastDone = (async () => {
          const stream = t
            .member("fast")
            .client.subscribe({ afterSeq: 0n }, { signal: abortFast.signal });
          for await (const e of stream) {
            if (e.event.case === "envelope") fastSeen.push(e.event.value.seq);
            if (fastSeen.length === total) return;
          }
        })();
        for (let i = 0; i < total; i++) {
          await t.lead.send({ to: "slow", message: text(`${i}:${body}`) });
          await t.lead.send({ to: "fast", message: text(`${i}`) });
        }
        // The fast subscriber gets everything while the slow one reads nothing.
        await fastDone;
        abortFast.abort();
        expect(fastSeen).toEqual(Array.from({ length: total }, (_, i) => BigInt(i + 1)));
        // The server cuts the stalled stream and forgets its subscription.
        await waitFor("the stalled subscription to be cut", () => env.app.hub.size === 0);
        // It says so in its log, naming the call and how the client carries on.
        expect(logged.filter((l) => l.event === "slow_consumer_cut")).toEqual([
          expect.objectContaining({
            path: "/team.v1.TeamService/Subscribe",
            msg: "cut a response whose client stopped reading; it can resume from its last seq",
          }),
        ]);

        // The client reads again: what was in flight, then the cut. An HTTP/2 reset
        // (ENHANCE_YOUR_CALM) carries no message of ours; connect-es reports it as Internal
        // naming the reset (grpc-js says RESOURCE_EXHAUSTED: the cases below), and the
        // TypeScript client's inbox retries on either, resubscribing from its last seq.
        await proxy.restore();
        let delivered = 0;
        const cutError = await (async () => {
          try {
            for (;;) {
              const next = await slow.next();
              if (next.done) return undefined;
              if (next.value.event.case === "envelope") delivered++;
            }
          } catch (err) {
            return ConnectError.from(err);
          }
        })();
        expect(cutError, "the cut stream must end in an error, not cleanly").toBeDefined();
        expect(cutError?.code, cutError?.message).toBe(Code.Internal);
        expect(cutError?.rawMessage).toBe(
          "Stream closed with error code NGHTTP2_ENHANCE_YOUR_CALM",
        );
        expect(delivered).toBeLessThan(total);
      } finally {
        await proxy.close();
      }

      // Resuming from the last seq handled (none here) delivers everything exactly once.
      const all: bigint[] = [];
      // (Breaking out of a connect-es stream loop does not cancel the call: abort it.)
      const done = new AbortController();
      for await (const e of t
        .member("slow")
        .client.subscribe({ afterSeq: 0n }, { signal: done.signal })) {
        if (e.event.case === "envelope") all.push(e.event.value.seq);
        if (all.length === 250) break;
      }
      done.abort();
      expect(all).toEqual(Array.from({ length: 250 }, (_, i) => BigInt(i + 1)));
    }, 120_000); // 16 MiB of sends on a shared machine: room, not a bound on speed

    // What a client sees when the server cuts it, by client library and protocol. Over
    // HTTP/2 the cut is an RST_STREAM with ENHANCE_YOUR_CALM, which carries no text of ours:
    // each library reports it in its own words. grpc-js maps that reset code to
    // RESOURCE_EXHAUSTED (@grpc/grpc-js src/subchannel-call.ts, on the stream's 'close');
    // connect-es reports Node's stream error, which comes before the 'close', as Internal.
    // Over HTTP/1.1 there is no stream to reset: the server destroys the connection, and
    // connect-es reports Aborted. The TypeScript client's inbox retries on all three.
    const windowFill = 40; // x 48 KiB: far more than an HTTP/2 client's 64 KiB window
    // HTTP/1.1 has no flow-control window: the socket buffers on both sides of the proxy
    // (several MiB each on loopback) must fill before a write waits.
    const socketFill = 500; // x 48 KiB = 24 MiB
    const cutClients: [string, (url: string, token: string) => CutReader, number, CutSeen][] = [
      [
        "grpc-js (gRPC)",
        grpcJsReader,
        windowFill,
        { code: "RESOURCE_EXHAUSTED", message: "Bandwidth exhausted or memory limit exceeded" },
      ],
      [
        "connect-es, gRPC",
        connectReader("grpc"),
        windowFill,
        { code: "Internal", message: "Stream closed with error code NGHTTP2_ENHANCE_YOUR_CALM" },
      ],
      [
        "connect-es, Connect over HTTP/2",
        connectReader("connect"),
        windowFill,
        { code: "Internal", message: "Stream closed with error code NGHTTP2_ENHANCE_YOUR_CALM" },
      ],
      [
        "connect-es, Connect over HTTP/1.1",
        connectReader("connect-h1"),
        socketFill,
        { code: "Aborted", message: "aborted" },
      ],
    ];
    for (const [client, open, messages, expected] of cutClients) {
      it(`a cut stream as a ${client} client sees it: ${expected.code} "${expected.message}"`, async () => {
        const logged = await serve({ slowConsumerTimeoutMs: 500, keepaliveIntervalMs: 3_600_000 });
        const t = await env.team("cut");
        const proxy = await startTcpProxy(env.server.port);
        try {
          const reader = open(proxy.url, t.member("cut").token);
          // A heartbeat (100 ms apart here) came through: connection and stream are open.
          await reader.firstEvent;
          expect(env.app.hub.size).toBe(1);
          proxy.stall("to-client");
          const body = randomBytes(36 * 1024).toString("base64"); // 48 KiB of text
          for (let i = 0; i < messages; i++) {
            await t.lead.send({ to: "cut", message: text(`${i}:${body}`) });
          }
          await waitFor("the stalled subscription to be cut", () => env.app.hub.size === 0);
          expect(logged.filter((l) => l.event === "slow_consumer_cut")).toHaveLength(1);
          await proxy.restore(); // the client reads again: what was in flight, then the cut
          expect(await reader.ended).toEqual(expected);
          reader.close();
        } finally {
          await proxy.close();
        }
      }, 120_000); // 24 MiB of sends over HTTP/1.1 on a shared machine: room, not a bound
    }

    // What a stalled stream holds is bounded by the page it read last (256 rows or 1 MiB,
    // server/handlers/subscribe.ts): it reads the next page only once the client took the
    // last, so a client that reads nothing makes the server read one page, however large
    // the backlog. Rows are counted as the database returns them, not guessed from memory.
    for (const [what, count, size, rowsBound] of [
      ["256 rows", 1_000, 1024, 256],
      ["1 MiB", 200, 64 * 1024, 16],
    ] as const) {
      it(`a stalled stream over a backlog bigger than a page reads one page (${what}) and no more before it is cut`, async () => {
        let watched: string | undefined;
        const counting = countingInboxReads(testDb.db, () => watched);
        await serve({ slowConsumerTimeoutMs: 500, keepaliveIntervalMs: 3_600_000 }, counting.db);
        const t = await env.team("stalled");
        const body = randomBytes((size * 3) / 4).toString("base64"); // `size` bytes of text
        for (let i = 0; i < count; i++) {
          await t.lead.send({ to: "stalled", message: text(body) });
        }
        watched = "stalled";
        const proxy = await startTcpProxy(env.server.port);
        try {
          // Nothing reaches the client from the start: it reads nothing at all.
          proxy.stall("to-client");
          const client = createClient(
            TeamService,
            transportFor(proxy.url, "grpc", t.member("stalled").token),
          );
          const abort = new AbortController();
          const stream = client.subscribe({ afterSeq: 0n }, { signal: abort.signal });
          const pending = stream[Symbol.asyncIterator]()
            .next()
            .catch(() => undefined);
          await waitFor("the stream to open", () => env.app.hub.size === 1);
          // After the cut nothing of this stream reads again: the count is final.
          await waitFor("the stalled stream to be cut", () => env.app.hub.size === 0);
          abort.abort();
          await pending;
        } finally {
          await proxy.close();
        }
        const rowsRead = counting.reads.reduce((n, r) => n + r.rows, 0);
        expect(rowsRead, JSON.stringify(counting.reads)).toBeGreaterThan(0);
        expect(rowsRead, JSON.stringify(counting.reads)).toBeLessThanOrEqual(rowsBound);
        for (const read of counting.reads) {
          expect(read.bytes - size, "bytes before a read's last row").toBeLessThan(1024 * 1024);
        }
        expect(count).toBeGreaterThan(rowsBound); // the backlog was bigger than the page
      });
    }

    it("a client that vanishes without closing is detected and its subscription freed", async () => {
      // The slow-consumer guard waits an hour: only the keepalive pings can find the ghost.
      await serve({ slowConsumerTimeoutMs: 3_600_000, keepaliveIntervalMs: 300 });
      const t = await env.team("ghost");
      const proxy = await startTcpProxy(env.server.port);
      try {
        const ghost = createClient(
          TeamService,
          transportFor(proxy.url, "grpc", t.member("ghost").token),
        );
        const abort = new AbortController();
        const stream = ghost
          .subscribe({ afterSeq: 0n }, { signal: abort.signal })
          [Symbol.asyncIterator]();
        expect((await stream.next()).done).toBe(false);
        expect(env.app.hub.size).toBe(1);
        // The client's host disappears: nothing passes either way, nothing is closed.
        proxy.stall("both");
        await waitFor("the server to drop the dead connection", () => env.app.hub.size === 0);
        abort.abort();
      } finally {
        await proxy.close();
      }
    });
  });
}
