import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { parseConfig } from "../../server/config.js";
import { RetryInfoSchema } from "../../server/interceptors/retry-info.js";
import { createSendRateLimiter } from "../../server/interceptors/send-rate.js";
import { describeEachDatabase } from "../support/harness.js";
import { inbox, planRequest, text } from "../support/protocol-helpers.js";

describe("send-rate limiter (a token bucket per member)", () => {
  it("allows a burst, then one send per 1/rate seconds, and says how long to wait", () => {
    let now = 0;
    const limiter = createSendRateLimiter({ perSecond: 10, burst: 3, now: () => now });
    expect([limiter.take(1), limiter.take(1), limiter.take(1)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(limiter.take(1)).toBeCloseTo(100); // the next token in 100 ms
    expect(limiter.take(2)).toBeUndefined(); // another member has its own bucket
    now = 50;
    expect(limiter.take(1)).toBeCloseTo(50);
    now = 100;
    expect(limiter.take(1)).toBeUndefined();
    expect(limiter.take(1)).toBeCloseTo(100);
  });

  it("a member idle far longer than the burst takes to refill may send only `burst` at once", () => {
    let now = 0;
    const limiter = createSendRateLimiter({ perSecond: 10, burst: 3, now: () => now });
    limiter.take(1); // the member is known and its bucket partly drained
    now = 60_000; // a minute idle: 600 tokens' worth of refill, capped at the burst of 3
    const allowed = [1, 2, 3, 4].map(() => limiter.take(1));
    expect(allowed).toEqual([undefined, undefined, undefined, expect.closeTo(100)]);
  });

  it("forgets idle members once many are tracked (memory follows who is sending)", () => {
    let now = 0;
    const limiter = createSendRateLimiter({ perSecond: 1000, burst: 1, now: () => now });
    for (let id = 0; id < 10_000; id++) limiter.take(id);
    expect(limiter.size).toBe(10_000);
    now = 10; // every bucket has refilled
    limiter.take(10_001);
    expect(limiter.size).toBe(1);
  });

  it("defaults to 100 sends a second with bursts of 200; 0 turns it off", () => {
    const c = parseConfig([], {});
    expect([c.sendRatePerSec, c.sendBurst]).toEqual([100, 200]);
    expect(parseConfig([], { SEND_RATE_PER_SEC: "0" }).sendRatePerSec).toBe(0);
  });
});

describeEachDatabase(
  "send-rate limit",
  (env) => {
    it("refuses a member's sends past its burst with ResourceExhausted, rule send-rate and a RetryInfo; stores and journals nothing", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      for (let i = 0; i < 3; i++)
        await alice.send({ to: "team-lead", message: planRequest(`p${i}`) });
      const err = await alice
        .send({ to: "team-lead", message: planRequest("one too many") })
        .then(() => undefined, ConnectError.from);
      expect(err?.code).toBe(Code.ResourceExhausted);
      expect(err?.rawMessage).toMatch(
        /^send-rate: member "alice" may send 0.01 messages a second \(bursts of 3\); retry in \d+ ms$/,
      );
      expect(err?.findDetails(RuleViolationSchema)[0]?.rule).toBe("send-rate");
      const retry = err?.findDetails(RetryInfoSchema)[0] as
        | { retryDelay?: { seconds: bigint; nanos: number } }
        | undefined;
      const delayMs =
        Number(retry?.retryDelay?.seconds ?? 0n) * 1000 + (retry?.retryDelay?.nanos ?? 0) / 1e6;
      expect(delayMs).toBeGreaterThan(0);
      expect(delayMs).toBeLessThanOrEqual(100_000);

      // Nothing stored, nothing journaled for the refused one; bob is not slowed by alice.
      expect((await inbox(t.lead)).map((e) => e.message?.kind.value)).toHaveLength(3);
      const journal = await t.lead.listAttempts({ member: "alice" });
      expect(journal.attempts).toHaveLength(3);
      await t.member("bob").client.send({ to: "alice", message: text("unaffected") });
    });
  },
  // One token per 100 s: however slow the machine, no token comes back during the test.
  { sendRate: { perSecond: 0.01, burst: 3 } },
);
