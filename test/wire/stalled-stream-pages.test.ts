import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SubscribeRequestSchema,
  SubscribeResponseSchema,
} from "../../gen/team/v1/team_service_pb.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { metricValue, scrapeMetrics } from "../support/metrics-scrape.js";
import { text } from "../support/protocol-helpers.js";
import { envelope, splitFrames } from "../support/raw-rpc.js";
import { waitFor } from "../support/wait.js";

/**
 * What a stalled Subscribe holds: a client that never reads (its HTTP/2 window stays at 0)
 * over a backlog much larger than a page. The server reads its next page only once the
 * last was written out, and lets go of the unwritten rest of a page when a write is not
 * accepted; once the client reads, everything arrives, in order, once.
 */

const BACKLOG = 300;
// 300 × 8 KiB ≈ 2.4 MB: more than two full pages (1 MiB), 30 times the client's window.
const BODY_CHARS = 8 * 1024;

const wires = {
  grpc: { "content-type": "application/grpc", te: "trailers" },
  connect: { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
} as const;

/** A raw HTTP/2 Subscribe that reads nothing until `read()`. */
function stalledSubscribe(url: string, token: string, wire: keyof typeof wires) {
  const session = http2.connect(url);
  session.on("error", () => {});
  const stream = session.request({
    ":method": "POST",
    ":path": "/team.v1.TeamService/Subscribe",
    authorization: `Bearer ${token}`,
    ...wires[wire],
  });
  stream.on("error", () => {});
  // Paused with no 'data' listener: Node does not consume what arrives, so no WINDOW_UPDATE
  // goes back and the server's writes stop once the stream's window (64 KiB) is full.
  stream.pause();
  stream.end(
    envelope(0, toBinary(SubscribeRequestSchema, create(SubscribeRequestSchema, { afterSeq: 0n }))),
  );
  let body = Buffer.alloc(0);
  return {
    /** Bytes the server may still send before the client reads (0: it is stalled for good). */
    window: () => stream.state.localWindowSize ?? -1,
    /** Reads from now on; resolves with the seqs of the first `count` envelopes. */
    read(count: number): Promise<bigint[]> {
      return new Promise((resolve, reject) => {
        stream.on("data", (chunk: Buffer) => {
          body = Buffer.concat([body, chunk]);
          const seqs = splitFrames(body)
            .frames.filter((f) => f.flags === 0)
            .map((f) => fromBinary(SubscribeResponseSchema, f.data).event)
            .flatMap((e) => (e.case === "envelope" ? [e.value.seq] : []));
          if (seqs.length >= count) resolve(seqs);
        });
        stream.once("close", () => reject(new Error(`stream closed, rst ${stream.rstCode}`)));
        stream.resume();
      });
    },
    close() {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
    },
  };
}

/** Polls an asynchronous `check` until it returns a value, or fails after `timeoutMs`. */

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`a stalled Subscribe holds no more than its write buffer [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };

    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      // No send-rate limit (the backlog is sent at once); the slow-consumer cut an hour
      // away, so that only the stall is under test.
      env = await startTestEnv(
        kind,
        testDb,
        { sendRate: { perSecond: 0, burst: 1 }, heartbeatIntervalMs: 3_600_000 },
        { slowConsumerTimeoutMs: 3_600_000 },
      );
    });
    afterAll(async () => {
      await env?.close();
      await testDb?.dispose();
    });

    for (const wire of ["grpc", "connect"] as const) {
      it(`${wire}: reads a bounded number of pages while stalled, holds none of them, resumes in order`, async () => {
        const t = await env.team("stalled");
        for (let i = 0; i < BACKLOG; i += 25) {
          await Promise.all(
            Array.from({ length: Math.min(25, BACKLOG - i) }, (_, k) =>
              t.lead.send({
                to: "stalled",
                // Random: a compressible body would not fill the window.
                message: text(`${i + k}:${randomBytes(BODY_CHARS * 0.75).toString("base64")}`),
              }),
            ),
          );
        }
        const url = env.server.url;
        const before = await scrapeMetrics(url);
        const pages = (s: typeof before) =>
          metricValue(s, "team_subscribe_pages_read_total") -
          metricValue(before, "team_subscribe_pages_read_total");

        const client = stalledSubscribe(url, t.member("stalled").token, wire);
        try {
          // Stalled for good: the client's window is used up (nothing more can leave the
          // server) and the server's last write was not accepted. A write may block for a
          // moment before that, while the window still drains the buffer.
          const stalled = await waitFor(
            "the stream to stall",
            async () => {
              if (client.window() !== 0) return undefined;
              const s = await scrapeMetrics(url);
              return metricValue(s, "team_subscribe_streams_blocked") === 1 ? s : undefined;
            },
            { timeoutMs: 20_000 },
          );
          // Pages are read only after the last was written out: what the window (64 KiB)
          // and the stream's write buffer (16 KiB) took, a message or more per page.
          const readWhileStalling = pages(stalled);
          expect(readWhileStalling).toBeGreaterThanOrEqual(1);
          expect(readWhileStalling).toBeLessThanOrEqual(1 + Math.ceil((80 * 1024) / BODY_CHARS));
          // And the unwritten rest of the last page is let go.
          expect(metricValue(stalled, "team_subscribe_page_bytes_held")).toBe(0);

          // New messages wake the subscription; a stalled stream reads nothing for them.
          for (let i = 0; i < 5; i++) {
            await t.lead.send({ to: "stalled", message: text(`late ${i}`) });
          }
          const still = await scrapeMetrics(url);
          expect(pages(still)).toBe(readWhileStalling);
          expect(metricValue(still, "team_subscribe_streams_blocked")).toBe(1);
          expect(metricValue(still, "team_subscribe_page_bytes_held")).toBe(0);

          // The client reads: everything, in order, once.
          const total = BACKLOG + 5;
          const seqs = await client.read(total);
          expect(seqs).toEqual(Array.from({ length: total }, (_, i) => BigInt(i + 1)));
          const after = await scrapeMetrics(url);
          expect(metricValue(after, "team_subscribe_streams_blocked")).toBe(0);
          expect(metricValue(after, "team_subscribe_page_bytes_held")).toBe(0);
        } finally {
          client.close();
        }
      });
    }
  });
}
