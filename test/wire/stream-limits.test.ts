import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { parseConfig } from "../../server/config.js";
import { type RunningServer, startServer } from "../../server/http/http-server.js";
import { silentLogger } from "../../server/logger.js";
import { waitFor } from "../support/child-server.js";
import { describeEachDatabase, type Protocol } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";
import { openSubscription } from "../support/subscription-reader.js";
import { watch } from "../support/team-watch.js";

describeEachDatabase(
  "subscriptions per member",
  (env) => {
    for (const protocol of ["grpc", "connect", "grpc-web"] as Protocol[]) {
      it(`a member's subscription past the cap is refused with ResourceExhausted naming the limit; others are not held back [${protocol}]`, async () => {
        const t = await env().team("alice", "bob");
        const alice = env().client(t.member("alice").token, protocol);
        const base = env().app.hub.size;
        // Both open, proved by each delivering a message.
        const open = [openSubscription(alice), openSubscription(alice)];
        await t.lead.send({ to: "alice", message: text("hi") });
        for (const s of open) await s.envelopes(1);

        const third = await (async () => {
          for await (const _ of alice.subscribe({})) return undefined;
          return undefined;
        })().then(() => undefined, ConnectError.from);
        expect(third?.code).toBe(Code.ResourceExhausted);
        expect(third?.rawMessage).toMatch(
          /^subscriptions-per-member: member "alice" already has 2 open subscriptions \(MAX_SUBSCRIPTIONS_PER_MEMBER\); close one, or resume on the one you have$/,
        );
        expect(third?.findDetails(RuleViolationSchema)[0]?.rule).toBe("subscriptions-per-member");

        // bob has his own allowance; once alice closes one, she may open another.
        const bob = openSubscription(env().client(t.member("bob").token, protocol));
        await t.lead.send({ to: "bob", message: text("hi bob") });
        await bob.envelopes(1);
        bob.close();
        open[0]?.close();
        // The closed streams leave once their cancels reach the server.
        await waitFor("the closed subscriptions to leave", 20_000, () =>
          env().app.hub.size === base + 1 ? true : undefined,
        );
        const again = openSubscription(alice, { afterSeq: 0n });
        await again.envelopes(1);
        again.close();
        open[1]?.close();
      });
    }
  },
  { maxSubscriptionsPerMember: 2 },
);

describeEachDatabase(
  "WatchTeam streams per member",
  (env) => {
    it("the lead's WatchTeam past the cap of 2 is refused with ResourceExhausted, rule watches-per-member; closing one lets the next open", async () => {
      const t = await env().team("alice");
      // Both open, proved by each delivering the team's first events.
      const open = [watch(t.lead), watch(t.lead)];
      for (const w of open) await w.until("the first event", (x) => x.events().length > 0);

      // The third either ends refused or delivers an event (it was let in): no waiting it out.
      const w3 = watch(t.lead);
      const third = await Promise.race([
        w3.ended,
        w3
          .until("an event", (x) => x.events().length > 0)
          .then(
            () => "let in",
            () => "ended",
          ),
      ]);
      w3.stop();
      expect(third).toBeInstanceOf(ConnectError);
      if (!(third instanceof ConnectError)) return;
      expect(third.code).toBe(Code.ResourceExhausted);
      expect(third.rawMessage).toMatch(
        /^watches-per-member: member "team-lead" already has 2 open WatchTeam streams \(MAX_SUBSCRIPTIONS_PER_MEMBER\); close one, or resume on the one you have$/,
      );
      expect(third.findDetails(RuleViolationSchema)[0]?.rule).toBe("watches-per-member");

      open[0]?.stop();
      // The stopped stream leaves once its cancel reaches the server.
      await waitFor("the stopped WatchTeam to leave", 20_000, () =>
        env().app.teams.size === 1 ? true : undefined,
      );
      const again = watch(t.lead);
      await again.until("the first event", (x) => x.events().length > 0);
      again.stop();
      open[1]?.stop();
    });
  },
  { maxSubscriptionsPerMember: 2 },
);

describe("HTTP/2 streams per connection", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      handler: (_req, res) => res.end(),
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      maxStreamsPerConnection: 7,
    });
  });
  afterAll(async () => {
    await server.close(1_000);
  });

  it("the cap is advertised in SETTINGS_MAX_CONCURRENT_STREAMS", async () => {
    const session = http2.connect(server.url);
    try {
      const settings = await new Promise<http2.Settings>((resolve, reject) => {
        session.once("remoteSettings", resolve);
        session.once("error", reject);
      });
      expect(settings.maxConcurrentStreams).toBe(7);
    } finally {
      session.destroy();
    }
  });

  it("defaults: 16 subscriptions per member, 256 streams per connection", () => {
    const c = parseConfig([], {});
    expect([c.maxSubscriptionsPerMember, c.maxStreamsPerConnection]).toEqual([16, 256]);
  });
});
