import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { RequestKind, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { Envelope, RequestRecord } from "../../gen/team/v1/records_pb.js";
import { DEFAULT_SWEEP_INTERVAL_MS } from "../../server/app.js";
import { MAX_TTL_MS } from "../../server/domain/limits.js";
import { describeEachDatabase, type TeamClient, type TestEnv } from "../support/harness.js";
import {
  inbox,
  kindOf,
  planRequest,
  pollStatus,
  refused,
  requestRecord,
  shutdownRequest,
  text,
} from "../support/protocol-helpers.js";

/** Small per-kind defaults, different from each other and from the built-in ones. */
const SHUTDOWN_DEFAULT_MS = 1_500;
const PLAN_DEFAULT_MS = 2_500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Timestamp in milliseconds, keeping the sub-millisecond part. */
function ms(t: Timestamp | undefined): number {
  if (!t) throw new Error("timestamp missing");
  return Number(t.seconds) * 1000 + t.nanos / 1e6;
}

/** A Timestamp in whole microseconds (PostgreSQL's precision), exactly. */
function micros(t: Timestamp | undefined): number {
  if (!t) throw new Error("timestamp missing");
  return Number(t.seconds) * 1_000_000 + Math.round(t.nanos / 1000);
}

/** expires_at - created_at of a request record is exactly its ttl (one clock reading). */
function expectDeadline(r: RequestRecord, ttlMs: number) {
  expect(micros(r.expiresAt) - micros(r.createdAt), `request ${r.requestId}`).toBe(ttlMs * 1000);
}

/** The request_updates about `requestId` in a member's inbox, once there is one (or 10 s). */
async function updatesWithin(client: TeamClient, requestId: string): Promise<Envelope[]> {
  const until = Date.now() + 10_000;
  for (;;) {
    const updates = (await inbox(client)).filter(
      (e) => e.requestId === requestId && kindOf(e.message) === "requestUpdate",
    );
    if (updates.length > 0 || Date.now() > until) return updates;
    await sleep(50);
  }
}

/**
 * Subscribes `client` and resolves with the first request_update about `requestId`, as it
 * arrives on the stream; undefined if none arrives within `withinMs`.
 */
async function nextUpdate(
  client: TeamClient,
  requestId: string,
  withinMs: number,
): Promise<Envelope | undefined> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), withinMs);
  try {
    for await (const res of client.subscribe({ afterSeq: 0n }, { signal: abort.signal })) {
      if (res.event.case !== "envelope") continue;
      const envelope = res.event.value;
      if (envelope.requestId === requestId && kindOf(envelope.message) === "requestUpdate") {
        return envelope;
      }
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return undefined;
}

async function countRequests(env: TestEnv, team: string): Promise<bigint> {
  const [row] = await env.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM requests r JOIN teams t ON t.id = r.team_id WHERE t.name = $1",
    [team],
  );
  return row?.n ?? -1n;
}

/**
 * Deadlines (issue 3, item 4): a per-kind default when the request gives no ttl (the app's
 * `protocols.defaultTtlMs`, from SHUTDOWN_TTL_MS / PLAN_APPROVAL_TTL_MS), a per-request ttl
 * within [1 s, 7 days] otherwise, and the expiry sweeper at its default interval.
 */
describeEachDatabase(
  "request deadlines: per-kind defaults, per-request ttl, prompt expiry",
  (env) => {
    it("a request without a ttl gets its kind's configured default and expires at it", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const shutdown = await t.lead.send({ to: "alice", message: shutdownRequest() });
      const plan = await alice.send({ to: "team-lead", message: planRequest("p") });

      const s = await requestRecord(t.lead, shutdown.requestId);
      expect(s.kind).toBe(RequestKind.SHUTDOWN);
      expectDeadline(s, SHUTDOWN_DEFAULT_MS);
      const p = await requestRecord(t.lead, plan.requestId);
      expect(p.kind).toBe(RequestKind.PLAN_APPROVAL);
      expectDeadline(p, PLAN_DEFAULT_MS);

      // Both expire, each at its own deadline: not before it, and the requester is told.
      const sDone = await pollStatus(t.lead, shutdown.requestId, RequestStatus.EXPIRED);
      expect(sDone.status).toBe(RequestStatus.EXPIRED);
      expect(ms(sDone.resolvedAt)).toBe(ms(s.expiresAt));
      const pDone = await pollStatus(alice, plan.requestId, RequestStatus.EXPIRED);
      expect(pDone.status).toBe(RequestStatus.EXPIRED);
      expect(ms(pDone.resolvedAt)).toBe(ms(p.expiresAt));

      // The sweeper tells each requester once.
      const leadUpdates = await updatesWithin(t.lead, shutdown.requestId);
      expect(await updatesWithin(alice, plan.requestId)).toHaveLength(1);
      expect(leadUpdates).toHaveLength(1);
    });

    // The record agrees with the deadline it was given: expires_at = created_at + ttl.
    it("expires_at - created_at is exactly the ttl given (default or per request)", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const sent: [{ requestId: string }, number][] = [
        [await t.lead.send({ to: "alice", message: shutdownRequest() }), SHUTDOWN_DEFAULT_MS],
        [await alice.send({ to: "team-lead", message: planRequest("p") }), PLAN_DEFAULT_MS],
        [
          await t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: 7n } }),
          7_000,
        ],
      ];
      for (const [{ requestId }, ttlMs] of sent) {
        const r = await requestRecord(t.lead, requestId);
        expect(micros(r.expiresAt) - micros(r.createdAt), `request ${requestId}`).toBe(
          ttlMs * 1000,
        );
      }
    });

    it("a per-request ttl overrides the kind's default, shorter or longer, up to the bounds", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const cases: [() => Promise<{ requestId: string }>, number][] = [
        [
          () => t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: 4n } }),
          4_000,
        ],
        [
          () => t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: 1n } }),
          1_000,
        ],
        [
          () =>
            t.lead.send({
              to: "alice",
              message: shutdownRequest(),
              ttl: { seconds: BigInt(MAX_TTL_MS / 1000) },
            }),
          MAX_TTL_MS,
        ],
        [
          () =>
            alice.send({
              to: "team-lead",
              message: planRequest("p"),
              ttl: { seconds: 1n, nanos: 250_000_000 },
            }),
          1_250,
        ],
        [
          () => alice.send({ to: "team-lead", message: planRequest("p"), ttl: { seconds: 60n } }),
          60_000,
        ],
      ];
      for (const [send, ttlMs] of cases) {
        const sent = await send();
        expectDeadline(await requestRecord(t.lead, sent.requestId), ttlMs);
      }
    });

    it("a ttl out of bounds, or on a message that opens no request, is refused (size-shape, field ttl) and stores nothing", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const before = await countRequests(env(), t.name);
      const cases: [() => Promise<unknown>, string][] = [
        [
          () =>
            t.lead.send({
              to: "alice",
              message: shutdownRequest(),
              ttl: { seconds: 0n, nanos: 999_999_999 },
            }),
          "just under 1 s",
        ],
        [
          () => t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: 0n } }),
          "zero",
        ],
        [
          () => t.lead.send({ to: "alice", message: shutdownRequest(), ttl: { seconds: -5n } }),
          "negative",
        ],
        [
          () =>
            alice.send({
              to: "team-lead",
              message: planRequest("p"),
              ttl: { seconds: BigInt(MAX_TTL_MS / 1000), nanos: 1_000_000 },
            }),
          "7 days and 1 ms",
        ],
        [() => t.lead.send({ to: "alice", message: text("hi"), ttl: { seconds: 10n } }), "on text"],
      ];
      for (const [call, what] of cases) {
        const r = await refused(call);
        expect(r.code, what).toBe(Code.InvalidArgument);
        expect(r.message.startsWith("size-shape: "), r.message).toBe(true);
        expect(r.detail?.rule, what).toBe("size-shape");
        expect(r.detail?.field, what).toBe("ttl");
      }
      expect(await countRequests(env(), t.name)).toBe(before);
      expect(await inbox(alice)).toEqual([]);
    });

    it("with the default sweep interval (a fraction of a second), the requester hears of an expiry live, dated not before expires_at", async () => {
      // Promptness is the sweep interval's: asserted on the configuration, not on a clock.
      expect(DEFAULT_SWEEP_INTERVAL_MS).toBeLessThanOrEqual(1_000);
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const shutdown = await t.lead.send({ to: "alice", message: shutdownRequest() });
      const plan = await alice.send({
        to: "team-lead",
        message: planRequest("p"),
        ttl: { seconds: 1n },
      });
      const [leadHeard, aliceHeard] = await Promise.all([
        nextUpdate(t.lead, shutdown.requestId, SHUTDOWN_DEFAULT_MS + 10_000),
        nextUpdate(alice, plan.requestId, 1_000 + 10_000),
      ]);
      for (const [heard, requestId, client] of [
        [leadHeard, shutdown.requestId, t.lead],
        [aliceHeard, plan.requestId, alice],
      ] as const) {
        expect(heard, `no request_update for ${requestId}`).toBeDefined();
        if (!heard) continue;
        const r = await requestRecord(client, requestId);
        expect(r.status).toBe(RequestStatus.EXPIRED);
        expect(heard.message?.kind.value).toMatchObject({
          requestId,
          status: RequestStatus.EXPIRED,
        });
        // Not early: the notice is stored (sent_at) at or after the deadline, on the
        // database's clock, which wrote both.
        expect(micros(heard.sentAt)).toBeGreaterThanOrEqual(micros(r.expiresAt));
      }
    });
  },
  // The app's default sweep interval (no sweepIntervalMs), small per-kind default ttls.
  {
    protocols: { defaultTtlMs: { shutdown: SHUTDOWN_DEFAULT_MS, plan_approval: PLAN_DEFAULT_MS } },
  },
);
