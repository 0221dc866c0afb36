import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  WatchTeamRequestSchema,
  WatchTeamResponseSchema,
} from "../../gen/team/v1/team_service_pb.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { scrapeMetrics } from "../support/metrics-scrape.js";
import { text } from "../support/protocol-helpers.js";
import { envelope, splitFrames } from "../support/raw-rpc.js";
import { waitFor } from "../support/wait.js";

/**
 * What a stalled WatchTeam holds: a lead whose client never reads (its HTTP/2 window stays
 * at 0) over a feed much larger than a page. The stream lets go of the unwritten rest of its
 * page when a write is not accepted, as a stalled Subscribe does; once the client reads,
 * every event arrives, in order, once.
 */

const BACKLOG = 300;
// 300 × 8 KiB ≈ 2.4 MB: more than two full pages (1 MiB), 30 times the client's window.
const BODY_CHARS = 8 * 1024;

const wires = {
  grpc: { "content-type": "application/grpc", te: "trailers" },
  connect: { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
} as const;

/** A raw HTTP/2 WatchTeam that reads nothing until `read()`. */
function stalledWatch(url: string, token: string, wire: keyof typeof wires) {
  const session = http2.connect(url);
  session.on("error", () => {});
  const stream = session.request({
    ":method": "POST",
    ":path": "/team.v1.TeamService/WatchTeam",
    authorization: `Bearer ${token}`,
    ...wires[wire],
  });
  stream.on("error", () => {});
  // Paused with no 'data' listener: no WINDOW_UPDATE goes back, so the server's writes stop
  // once the stream's window (64 KiB) is full.
  stream.pause();
  stream.end(envelope(0, toBinary(WatchTeamRequestSchema, create(WatchTeamRequestSchema, {}))));
  let body = Buffer.alloc(0);
  return {
    window: () => stream.state.localWindowSize ?? -1,
    /** Reads from now on; resolves with the inbox seqs of the first `count` envelope events. */
    read(count: number): Promise<bigint[]> {
      return new Promise((resolve, reject) => {
        stream.on("data", (chunk: Buffer) => {
          body = Buffer.concat([body, chunk]);
          const seqs = splitFrames(body)
            .frames.filter((f) => f.flags === 0)
            .map((f) => fromBinary(WatchTeamResponseSchema, f.data).kind)
            .flatMap((k) =>
              k.case === "event" && k.value.change.case === "envelope"
                ? [k.value.change.value.envelope?.seq ?? -1n]
                : [],
            );
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

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`a stalled WatchTeam holds none of its page [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };

    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      // No send-rate limit; the slow-consumer cut an hour away: only the stall is under test.
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
      it(`${wire}: lets go of the page it cannot write, resumes in order`, {
        timeout: 90_000,
      }, async () => {
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
        const held = (s: Awaited<ReturnType<typeof scrapeMetrics>>) =>
          s.value("team_watch_page_bytes_held");

        const client = stalledWatch(url, t.leadToken, wire);
        try {
          // Stalled for good: the client's window is used up and the stream's last write was
          // not accepted, so the rest of its page was let go.
          const stalled = await waitFor(
            "the watch to stall holding nothing",
            async () => {
              if (client.window() !== 0) return undefined;
              const s = await scrapeMetrics(url);
              return held(s) === 0 ? s : undefined;
            },
            { timeoutMs: 20_000 },
          );
          expect(held(stalled)).toBe(0);

          // New events wake the stream; a stalled stream reads nothing for them.
          for (let i = 0; i < 5; i++) {
            await t.lead.send({ to: "stalled", message: text(`late ${i}`) });
          }
          expect(held(await scrapeMetrics(url))).toBe(0);

          // The client reads: every envelope, in order, once.
          const total = BACKLOG + 5;
          const seqs = await client.read(total);
          expect(seqs).toEqual(Array.from({ length: total }, (_, i) => BigInt(i + 1)));
          expect(held(await scrapeMetrics(url))).toBe(0);
        } finally {
          client.close();
        }
      });
    }
  });
}
