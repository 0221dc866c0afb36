import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { callerKey } from "../../server/caller.js";
import { parseConfig } from "../../server/config.js";
import { RetryInfoSchema } from "../../server/interceptors/retry-info.js";
import { createSendRateLimiter, sendRateInterceptor } from "../../server/interceptors/send-rate.js";
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

  it("forgets idle members once many are tracked, and only them (memory follows who is sending)", () => {
    let now = 0;
    const limiter = createSendRateLimiter({ perSecond: 1, burst: 1, now: () => now });
    for (let id = 0; id < 10_000; id++) limiter.take(id);
    expect(limiter.size).toBe(10_000);
    now = 1_500;
    limiter.take(5); // member 5 sends again: half refilled by 2 s
    now = 2_000; // every other bucket has refilled
    limiter.take(10_001);
    expect(limiter.size).toBe(2);
    expect(limiter.take(5)).toBeCloseTo(500); // member 5's drained bucket was kept
  });

  /** Sends through the interceptor as `ann`: each one's refusal message, or "sent". */
  async function sendsThrough(options: { perSecond: number; burst: number }, n: number) {
    const intercept = sendRateInterceptor({ ...options, now: () => 0 })(
      (async () => ({})) as never,
    );
    const req = {
      method: TeamService.method.send,
      contextValues: createContextValues().set(callerKey, {
        id: 2,
        teamId: 1,
        teamName: "t",
        name: "ann",
        role: "teammate",
        lead: { id: 1, name: "lead", permissionMode: "default" },
      }),
    } as never;
    const outcomes: string[] = [];
    for (let i = 0; i < n; i++) {
      outcomes.push(
        await intercept(req).then(
          () => "sent",
          (e: Error) => e.message,
        ),
      );
    }
    return outcomes;
  }

  it("a rate of 0 turns the limit off in the interceptor: sends past the burst all go through", async () => {
    expect(await sendsThrough({ perSecond: 0, burst: 1 }, 3)).toEqual(["sent", "sent", "sent"]);
  });

  it("refuses in the interceptor with the rate and burst in the sentence, one message in the singular", async () => {
    expect(await sendsThrough({ perSecond: 1, burst: 1 }, 2)).toEqual([
      "sent",
      'send-rate: member "ann" may send 1 message a second (bursts of 1); retry in 1000 ms',
    ]);
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
