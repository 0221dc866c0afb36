import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { parseConfig } from "../../server/config.js";
import { createAuthThrottle } from "../../server/interceptors/auth-throttle.js";
import { RetryInfoSchema } from "../../server/interceptors/retry-info.js";
import type { Database } from "../../server/store/database.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { type Protocol, startTestEnv, type TestEnv } from "../support/harness.js";

const wellFormed = () => `tp_${randomBytes(32).toString("base64url")}`;

describe("auth throttle (failures per address, unknown tokens remembered)", () => {
  it("a burst of failures, then refusals without a look-up saying when to retry; another address has its own", () => {
    let now = 0;
    const t = createAuthThrottle({ perSecond: 10, burst: 2, unknownTtlMs: 1_000, now: () => now });
    for (const h of ["a", "b"]) {
      t.beforeLookUp("10.0.0.1", h);
      t.unknown("10.0.0.1", h);
    }
    expect(() => t.beforeLookUp("10.0.0.1", "c")).toThrow(/^auth-failures: too many failed/);
    t.beforeLookUp("10.0.0.2", "c"); // its own bucket
    now = 100; // one failure refilled
    t.beforeLookUp("10.0.0.1", "c");
    // A token found unknown is refused again at once, from any address, until its time passes.
    expect(() => t.beforeLookUp("10.0.0.3", "a")).toThrow(/^unknown token$/);
    now = 1_001;
    t.beforeLookUp("10.0.0.4", "a");
  });

  it("defaults: 10 failures a second, bursts of 20, unknown tokens remembered 60 s", () => {
    const c = parseConfig([], {});
    expect([c.authFailuresPerSec, c.authFailuresBurst, c.authUnknownTokenTtlMs]).toEqual([
      10, 20, 60_000,
    ]);
  });
});

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`failed authentication is throttled before the database [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };
    /** Token look-ups that reached the database (the real one, counted on the way). */
    let lookUps = 0;
    let leadToken: string;
    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      const counted = new Proxy(testDb.db, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop !== "query" || typeof value !== "function") return value;
          return (sql: string, ...rest: unknown[]) => {
            if (sql.includes("m.token_hash = $1")) lookUps++;
            return value.call(target, sql, ...rest);
          };
        },
      }) as Database;
      env = await startTestEnv(
        kind,
        { ...testDb, db: counted },
        // Refilled once in 100 s: nothing comes back during the test.
        { authFailures: { perSecond: 0.01, burst: 5, unknownTtlMs: 60_000 } },
      );
      // A member in use before the flood: its token is in the caller cache (10 s).
      const t = await env.team();
      leadToken = t.leadToken;
      await t.lead.listMembers({});
    });
    afterAll(async () => {
      await env?.close();
      await testDb?.dispose();
    });

    const refusal = (err: unknown) => {
      const e = ConnectError.from(err);
      return {
        code: e.code,
        rule: e.findDetails(RuleViolationSchema)[0]?.rule,
        retry: e.findDetails(RetryInfoSchema).length > 0,
        message: e.rawMessage,
      };
    };

    for (const protocol of ["connect", "grpc"] satisfies Protocol[]) {
      it(`${protocol}: 5 unknown tokens from one address are looked up; the next 50 are refused Unauthenticated with RetryInfo and cost no look-up; a valid token in use is not slowed`, async () => {
        const before = lookUps;
        // Both protocols come from 127.0.0.1: the first test spends the address's 5 look-ups.
        const spent = protocol === "connect" ? 5 : 0;
        for (let i = 0; i < spent; i++) {
          const err = await env.client(wellFormed(), protocol).listMembers({}).catch(refusal);
          expect(err).toMatchObject({ code: Code.Unauthenticated, message: "unknown token" });
        }
        expect(lookUps - before).toBe(spent);
        for (let i = 0; i < 50; i++) {
          const err = await env.client(wellFormed(), protocol).listMembers({}).catch(refusal);
          expect(err).toMatchObject({
            code: Code.Unauthenticated,
            rule: "auth-failures",
            retry: true,
          });
        }
        expect(lookUps - before).toBe(spent);
        const lead = env.client(leadToken, protocol);
        expect((await lead.listMembers({})).members.length).toBeGreaterThan(0);
        // The Subscribe fast path (gRPC) checks tokens through the same throttle.
        const stream = env.client(wellFormed(), protocol).subscribe({});
        const err = await (async () => {
          for await (const _ of stream) return undefined;
        })().catch(refusal);
        expect(err).toMatchObject({ code: Code.Unauthenticated, rule: "auth-failures" });
        expect(lookUps - before).toBe(spent);
      });
    }
  });
}
