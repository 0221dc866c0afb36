import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import type { SendRequest } from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase, type TestEnv, uniqueName } from "../support/harness.js";
import { type ProxiedPostgresEnv, startBehindProxy } from "../support/proxied-postgres.js";
import type { TcpProxy } from "../support/tcp-proxy.js";

/**
 * The client library's half of "nothing acknowledged is lost, nothing is stored twice":
 * every send carries a message_id unless the caller says otherwise, and a send that meets
 * Unavailable (the server's database is away, failing over) is sent again with the same
 * key until it is answered or its deadline passes. The outage here: a proxy in front of
 * PostgreSQL is cut and restored.
 */
describe.skipIf(inject("pgAdminUrl") === "")("the client retries sends [postgres]", () => {
  let proxied: ProxiedPostgresEnv;
  let proxy: TcpProxy;
  let env: TestEnv & { close(): Promise<void> };

  beforeAll(async () => {
    proxied = await startBehindProxy();
    ({ env, proxy } = proxied);
  });

  afterAll(async () => {
    await proxied?.close();
  });

  /** A client whose send attempts are counted by the code each ended with. */
  async function countingTeam() {
    const outcomes: string[] = [];
    /** The message_id each Send attempt carried, in order. */
    const ids: string[] = [];
    let onOutcome = () => {};
    const counter: Interceptor = (next) => async (req) => {
      if (req.method.name === "Send" && !req.stream)
        ids.push((req.message as SendRequest).messageId);
      try {
        const res = await next(req);
        if (req.method.name === "Send") outcomes.push("ok");
        return res;
      } catch (err) {
        if (req.method.name === "Send") outcomes.push(Code[ConnectError.from(err).code]);
        throw err;
      } finally {
        onOutcome();
      }
    };
    const clientFor = (token: string): TeamClient =>
      createTeamClient({
        baseUrl: env.server.url,
        sendBackoff: { initialMs: 20, maxMs: 100 },
        transport: createConnectTransport({
          baseUrl: env.server.url,
          httpVersion: "2",
          interceptors: [
            counter,
            (next) => (req) => {
              req.header.set("authorization", `Bearer ${token}`);
              return next(req);
            },
          ],
        }),
      });
    const anon = createTeamClient({ baseUrl: env.server.url });
    const created = await anon.createTeam(uniqueName("retry"));
    const lead = clientFor(created.token);
    const alice = clientFor((await lead.addMember("alice")).token);
    /** Resolves once `n` send attempts have ended. */
    const attempts = (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (outcomes.length >= n) resolve();
        };
        onOutcome = check;
        check();
      });
    return { lead, alice, outcomes, ids, attempts };
  }

  it('every send carries a message_id of its own unless the caller passes one, or "" for none', async () => {
    const { lead, alice } = await countingTeam();
    await lead.sendText("alice", "one");
    await lead.sendText("alice", "two");
    await lead.sendText("alice", "mine", { messageId: "k-1" });
    await lead.sendText("alice", "plain", { messageId: "" });
    const ids = (await alice.readInbox({ afterSeq: 0 })).envelopes.map((e) => e.messageId);
    expect(ids[0]).toMatch(/^c-[0-9a-f-]{36}$/);
    expect(ids[1]).toMatch(/^c-[0-9a-f-]{36}$/);
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids.slice(2)).toEqual(["k-1", ""]);
  });

  it("a send that meets Unavailable is sent again with the same message_id, and stored once", async () => {
    const { lead, alice, outcomes, ids, attempts } = await countingTeam();
    await proxy.cut();
    let restored = false;
    try {
      const sending = lead.sendText("alice", "through the outage");
      await attempts(2); // refused at least twice while the database is away...
      expect(outcomes.slice(0, 2)).toEqual(["Unavailable", "Unavailable"]);
      await proxy.restore();
      restored = true;
      const sent = await sending; // ...and answered once it is back
      expect(sent.seq).toBe(1n);
      expect(outcomes.at(-1)).toBe("ok");
    } finally {
      if (!restored) await proxy.restore();
    }
    const inbox = (await alice.readInbox({ afterSeq: 0 })).envelopes;
    expect(inbox.map((e) => e.message?.kind.value)).toEqual(["through the outage"]);
    // Every attempt carried the one key the stored message has.
    expect(ids.length).toBe(outcomes.length);
    expect(new Set(ids)).toEqual(new Set([inbox[0]?.messageId]));
  });

  it("a send without message_id, and a refusal, are tried once", async () => {
    const { lead, outcomes } = await countingTeam();
    await proxy.cut();
    try {
      const err = await lead.sendText("alice", "plain", { messageId: "" }).catch((e) => e);
      expect(ConnectError.from(err).code).toBe(Code.Unavailable);
      expect(outcomes).toEqual(["Unavailable"]);
    } finally {
      await proxy.restore();
    }
    // Back up (the pool searches again after a short pause): a refusal is not retried.
    let refused: ConnectError | undefined;
    for (let i = 0; i < 100 && refused?.code !== Code.NotFound; i++) {
      outcomes.length = 0;
      refused = ConnectError.from(await lead.sendText("nobody", "x").catch((e) => e));
      if (refused.code !== Code.NotFound) await new Promise((r) => setTimeout(r, 50));
    }
    expect(refused?.code).toBe(Code.NotFound);
    // The keyed send may still meet Unavailable first while the pool finds the database
    // again (those attempts are retries by design); the refusal itself ends it at once.
    expect(outcomes.filter((o) => o !== "Unavailable")).toEqual(["NotFound"]);
    expect(outcomes.at(-1)).toBe("NotFound");
  });
});

/**
 * The other half of an outage: the server stored the send, but its answer was lost on the way
 * back (the connection dropped). Only a retry with the same key is answered from what was
 * stored; a new key per attempt would store the message twice. The lost answer is made by a
 * client interceptor that lets the first Send through to the real server and then throws.
 */
describeEachDatabase("the client retries a send whose answer was lost", (env) => {
  it("the retry carries the first attempt's message_id, is answered replayed, and the message is stored once", async () => {
    const t = await env().team("alice");
    const ids: string[] = [];
    const loseFirstAnswer: Interceptor = (next) => async (req) => {
      if (req.method.name !== "Send" || req.stream) return next(req);
      ids.push((req.message as SendRequest).messageId);
      const res = await next(req);
      if (ids.length === 1) throw new ConnectError("the answer was lost", Code.Unavailable);
      return res;
    };
    const lead = createTeamClient({
      baseUrl: env().server.url,
      sendBackoff: { initialMs: 10, maxMs: 10 },
      transport: createConnectTransport({
        baseUrl: env().server.url,
        httpVersion: "2",
        interceptors: [
          loseFirstAnswer,
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${t.leadToken}`);
            return next(req);
          },
        ],
      }),
    });
    const sent = await lead.sendText("alice", "once");
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(ids[0]);
    expect(sent.replayed).toBe(true);
    const inbox = (await t.member("alice").client.readInbox({ afterSeq: 0n })).envelopes;
    expect(inbox.map((e) => [e.message?.kind.value, e.messageId])).toEqual([["once", ids[0]]]);
  });
});
