import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv, transportFor } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

async function eventually(what: string, check: () => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
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
    const serve = async (options: {
      slowConsumerTimeoutMs: number;
      keepaliveIntervalMs: number;
    }) => {
      // No send-rate limit: the lead floods two inboxes as fast as it can.
      env = await startTestEnv(
        kind,
        testDb,
        { heartbeatIntervalMs: 100, sendRate: { perSecond: 0, burst: 1 } },
        options,
      );
    };

    it("a subscriber that stops reading is cut with a resumable error; others are unaffected; resuming loses nothing", async () => {
      // Keepalive pings are an hour apart: only the slow-consumer guard can cut.
      await serve({ slowConsumerTimeoutMs: 500, keepaliveIntervalMs: 3_600_000 });
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
        await eventually("the stalled subscription to be cut", () => env.app.hub.size === 0);
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
    });

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
        await eventually("the server to drop the dead connection", () => env.app.hub.size === 0);
        abort.abort();
      } finally {
        await proxy.close();
      }
    });
  });
}
