import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SubscribeRequestSchema,
  WatchTeamRequestSchema,
} from "../../gen/team/v1/team_service_pb.js";
import { RetryInfoSchema } from "../../server/interceptors/retry-info.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { envelope } from "../support/raw-rpc.js";
import { waitFor } from "../support/wait.js";

/**
 * After the server cut a stream whose client stopped reading, the same member's reopen of
 * that kind of stream within SLOW_CONSUMER_BACKOFF_MS is refused ResourceExhausted, rule
 * slow-consumer-backoff, with a RetryInfo: a client that never reads cannot have a fresh page
 * served to it each time the cut comes round. The other kind of stream is not held back.
 */

// 60 × 8 KiB of random bodies: several times the client's window (64 KiB).
const BACKLOG = 60;
const BODY_CHARS = 8 * 1024;

const requests = {
  WatchTeam: () => toBinary(WatchTeamRequestSchema, create(WatchTeamRequestSchema, {})),
  Subscribe: () =>
    toBinary(SubscribeRequestSchema, create(SubscribeRequestSchema, { afterSeq: 0n })),
} as const;

/** A raw HTTP/2 Connect stream that never reads what the server sends. */
function stalled(url: string, token: string, method: keyof typeof requests) {
  const session = http2.connect(url);
  session.on("error", () => {});
  const stream = session.request({
    ":method": "POST",
    ":path": `/team.v1.TeamService/${method}`,
    authorization: `Bearer ${token}`,
    "content-type": "application/connect+proto",
    "connect-protocol-version": "1",
  });
  stream.on("error", () => {});
  stream.pause();
  stream.end(envelope(0, requests[method]()));
  return () => session.destroy();
}

async function refusal(open: () => AsyncIterable<unknown>): Promise<ConnectError | undefined> {
  try {
    for await (const _ of open()) return undefined;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`a reopen right after a slow-consumer cut is refused [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };

    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      // A cut after 300 ms of a write not accepted; the back-off window an hour long, so that
      // the reopen falls in it however slow the machine.
      env = await startTestEnv(
        kind,
        testDb,
        { sendRate: { perSecond: 0, burst: 1 }, slowConsumerBackoffMs: 3_600_000 },
        { slowConsumerTimeoutMs: 300 },
      );
    });
    afterAll(async () => {
      await env?.close();
      await testDb?.dispose();
    });

    // Subscribe first: the served Subscribe of the WatchTeam case is let go asynchronously
    // (the hub's count would see it for a moment).
    for (const method of ["Subscribe", "WatchTeam"] as const) {
      it(`${method}: ResourceExhausted slow-consumer-backoff with RetryInfo; the other kind served`, async () => {
        const t = await env.team("reader");
        for (let i = 0; i < BACKLOG; i++) {
          await t.lead.send({
            to: "reader",
            message: text(`${i}:${randomBytes(BODY_CHARS * 0.75).toString("base64")}`),
          });
        }
        // The watcher is the lead; the subscriber the member whose inbox has the backlog.
        const token = method === "WatchTeam" ? t.leadToken : t.member("reader").token;
        const open = () => (method === "WatchTeam" ? env.app.teams.size : env.app.hub.size);
        const close = stalled(env.server.url, token, method);
        try {
          await waitFor(`the stalled ${method} to open`, () => open() === 1);
          await waitFor(`the stalled ${method} to be cut`, () => open() === 0, {
            timeoutMs: 20_000,
          });
        } finally {
          close();
        }

        const client = method === "WatchTeam" ? t.lead : t.member("reader").client;
        const err = await refusal(() =>
          method === "WatchTeam" ? client.watchTeam({}) : client.subscribe({ afterSeq: 0n }),
        );
        expect(err?.code).toBe(Code.ResourceExhausted);
        expect(err?.rawMessage).toMatch(/^slow-consumer-backoff: .*SLOW_CONSUMER_BACKOFF_MS/);
        const [retry] = err?.findDetails(RetryInfoSchema) ?? [];
        const delay = (retry as { retryDelay?: { seconds: bigint } } | undefined)?.retryDelay;
        expect(delay?.seconds).toBeGreaterThan(0n);

        // The other kind of stream is served (a backlog to read, or a history that ends).
        const other =
          method === "WatchTeam"
            ? t.member("reader").client.subscribe({ afterSeq: 0n })
            : t.lead.watchTeam({ historyOnly: true });
        const served = await refusal(() => other);
        expect(served).toBeUndefined();
      });
    }
  });
}
