import { describe, expect, inject, it } from "vitest";
import { createTeamClient, type InboxStatus, type TeamClient } from "../../client/index.js";
import {
  afterThisTest,
  freePort,
  startServerOn,
  tempDataDir,
  waitFor,
  withTimeout,
} from "../support/child-server.js";
import { createScratchPgDatabase } from "../support/databases.js";

/**
 * The inbox iterator's promise, against the real server as a process: while a producer keeps
 * sending, the server is killed with SIGKILL (no graceful stop, streams cut mid-flight) and
 * started again on the same port and data; the consumer must see every message exactly once
 * and in order.
 */

const TOTAL = 60;

/** Sends m1..mN, each until it is stored: a retry reuses its message_id, so none is stored twice. */
async function produce(lead: TeamClient, onSent: (n: number) => void): Promise<void> {
  for (let n = 1; n <= TOTAL; n++) {
    for (;;) {
      try {
        await lead.sendText("alice", `m${n}`, { messageId: `m${n}` });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // the server is down: try again
      }
    }
    onSent(n);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const kinds = [
  { kind: "embedded", skip: false },
  { kind: "postgres", skip: inject("pgAdminUrl") === "" },
] as const;

describe("the inbox across server crashes", () => {
  for (const { kind, skip } of kinds) {
    it.skipIf(skip)(
      `every message exactly once, in order, while the server is killed and restarted [${kind}]`,
      async () => {
        let env: Record<string, string>;
        if (kind === "embedded") {
          env = { DATA_DIR: await tempDataDir() };
        } else {
          const scratch = await createScratchPgDatabase();
          afterThisTest(() => scratch.drop());
          env = { DATABASE_URL: scratch.url };
        }
        const port = await freePort();
        let server = await startServerOn(port, env);
        const url = `http://127.0.0.1:${port}`;
        const anon = createTeamClient({ baseUrl: url, timeoutMs: 5_000 });
        const created = await anon.createTeam("crash-test");
        const lead = anon.withToken(created.token);
        const alice = anon.withToken((await lead.addMember("alice")).token);

        const statuses: InboxStatus[] = [];
        const inbox = alice.inbox({
          backoff: { initialMs: 50, maxMs: 500 },
          onStatus: (s) => statuses.push(s),
        });
        const received: string[] = [];
        const consumer = (async () => {
          for await (const e of inbox) {
            received.push(String(e.message?.kind.value));
            if (received.length === TOTAL) break;
          }
        })();

        let sent = 0;
        const producer = produce(lead, (n) => {
          sent = n;
        });
        // Kill mid-stream: the consumer is connected and messages are flowing.
        const crashes = kind === "embedded" ? [TOTAL / 3] : [TOTAL / 3, (2 * TOTAL) / 3];
        for (const at of crashes) {
          await waitFor("messages to flow", 30_000, () =>
            sent >= at && received.length > 0 ? true : undefined,
          );
          server.child.kill("SIGKILL");
          await server.exited;
          server = await startServerOn(port, env);
        }
        await withTimeout("the producer", 60_000, producer);
        await withTimeout("the consumer", 60_000, consumer);

        const expected = Array.from({ length: TOTAL }, (_, i) => `m${i + 1}`);
        expect(received).toEqual(expected);
        // It did lose its stream and come back, once per crash at least.
        expect(inbox.connects).toBeGreaterThan(crashes.length);
        expect(statuses.filter((s) => s.state === "disconnected").length).toBeGreaterThan(0);
        // And the inbox itself holds each message once: the producer's retries were idempotent.
        const stored = await alice.readInbox({ afterSeq: 0, limit: 1000 });
        expect(stored.envelopes.map((e) => e.message?.kind.value)).toEqual(expected);
      },
      150_000,
    );
  }
});
