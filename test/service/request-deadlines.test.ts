import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { LeaseMode, RequestKind, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import { DEFAULT_SWEEP_INTERVAL_MS } from "../../server/app.js";
import { MAX_TTL_MS } from "../../server/domain/limits.js";
import { defaultProtocolConfig } from "../../server/protocols/protocol.js";
import { describeEachDatabase, type TeamClient, type TestEnv } from "../support/harness.js";
import {
  expectDeadline,
  inbox,
  kindOf,
  micros,
  planRequest,
  planResponse,
  pollStatus,
  refused,
  requestRecord,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";
import { type Watcher, watch, watchersParked } from "../support/team-watch.js";
import { sleep, waitFor } from "../support/wait.js";

/** Small per-kind defaults, different from each other and from the built-in ones. */
const SHUTDOWN_DEFAULT_MS = 1_500;
const PLAN_DEFAULT_MS = 2_500;

/** A Timestamp in milliseconds, keeping the sub-millisecond part. */
function ms(t: Timestamp | undefined): number {
  if (!t) throw new Error("timestamp missing");
  return Number(t.seconds) * 1000 + t.nanos / 1e6;
}

/** The request_update envelopes about one request. */
const updatesFor = (envelopes: Envelope[], requestId: string) =>
  envelopes.filter((e) => e.requestId === requestId && kindOf(e.message) === "requestUpdate");

/** The request_updates about `requestId` in a member's inbox, once there is one (or 10 s). */
async function updatesWithin(client: TeamClient, requestId: string): Promise<Envelope[]> {
  const until = Date.now() + 10_000;
  for (;;) {
    const updates = updatesFor(await inbox(client), requestId);
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
 * Deadlines and expiry, the one home of both: a per-kind default when the request gives no
 * ttl (the app's `protocols.defaultTtlMs`, from SHUTDOWN_TTL_MS / PLAN_APPROVAL_TTL_MS), a
 * per-request ttl within [1 s, 7 days] otherwise, the expiry sweeper at its default interval,
 * what an expired request still allows (nothing), and an answer racing the deadline.
 * AwaitRequest's own expiry case is with the other request RPCs in requests.test.ts.
 */
describeEachDatabase(
  "request deadlines: per-kind defaults, per-request ttl, expiry",
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

    describe("expiry", () => {
      it("an unanswered shutdown_request expires; the lead is told with a request_update; a late response is refused once-only and stores nothing", async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const sent = await t.lead.send({
          to: "alice",
          message: shutdownRequest("wrap up"),
          ttl: { seconds: 1n },
        });
        const pending = await requestRecord(t.lead, sent.requestId);
        expect(pending.status).toBe(RequestStatus.PENDING);
        expectDeadline(pending, 1_000);

        const seen = await pollStatus(t.lead, sent.requestId, RequestStatus.EXPIRED);
        expect(seen.status).toBe(RequestStatus.EXPIRED);

        // The sweeper has run once the update is in the lead's inbox.
        expect(await updatesWithin(t.lead, sent.requestId)).toHaveLength(1);
        const leadInbox = await inbox(t.lead);
        const expired = await requestRecord(t.lead, sent.requestId);
        expect(expired.status).toBe(RequestStatus.EXPIRED);
        expect(expired.resolvedAt).toBeDefined();
        expect(expired.response).toBeUndefined();
        expect(leadInbox).toHaveLength(1);
        expect(leadInbox[0]).toMatchObject({
          from: "",
          to: "team-lead",
          requestId: sent.requestId,
          team: t.name,
        });
        expect(leadInbox[0]?.message?.kind).toEqual({
          case: "requestUpdate",
          value: expect.objectContaining({
            requestId: sent.requestId,
            kind: RequestKind.SHUTDOWN,
            status: RequestStatus.EXPIRED,
            detail: `request ${sent.requestId} to "alice" expired without an answer`,
          }),
        });
        const aliceBefore = await inbox(alice);
        expect(aliceBefore.map((e) => kindOf(e.message))).toEqual(["shutdownRequest"]);

        for (const approve of [true, false]) {
          const late = await refused(() =>
            alice.send({
              to: "team-lead",
              message: shutdownResponse(sent.requestId, approve, "too late"),
            }),
          );
          expect(late.code).toBe(Code.FailedPrecondition);
          expect(late.message).toMatch(/^once-only: /);
          expect(late.message).toContain("expired");
          expect(late.detail?.rule).toBe("once-only");
        }
        // Nothing was stored for the refused calls: the lead's inbox holds only the update,
        // alice's only the request; the record is unchanged and alice still works.
        expect(await inbox(t.lead)).toEqual(leadInbox);
        expect(await inbox(alice)).toEqual(aliceBefore);
        expect(await requestRecord(alice, sent.requestId)).toEqual(expired);
        expect((await alice.listMembers({})).members.length).toBe(2);

        // Nor can an expired request be canceled.
        const cancel = await refused(() => t.lead.cancelRequest({ requestId: sent.requestId }));
        expect(cancel.code).toBe(Code.FailedPrecondition);
        expect(cancel.message).toContain("expired");
        expect(cancel.detail?.rule).toBe("once-only");
      });

      it("a response racing the deadline: exactly one of the answer and the expiry takes effect", async () => {
        const rounds = 8;
        const outcomes = await Promise.all(
          Array.from({ length: rounds }, async (_, i) => {
            const t = await env().team("coder");
            const coder = t.member("coder").client;
            const sent = await coder.send({
              to: "team-lead",
              message: planRequest(`plan ${i}`),
              ttl: { seconds: 3n },
            });
            // Answer at a moment spread over 0..5 s after the request opened: the first round
            // lands well before the 3 s deadline and the last well after it, whatever the load
            // (so both outcomes occur, asserted below); the rounds between race the sweeper.
            await sleep(Math.round((5_000 * i) / (rounds - 1)));
            const approve = i % 2 === 0;
            const answer = await t.lead
              .send({ to: "coder", message: planResponse(sent.requestId, approve, "ok") })
              .then(
                () => undefined,
                (e: unknown) => e,
              );
            // A refused answer: wait for the sweeper's expiry notice. Not for the status: a
            // record past its deadline reads as expired before the sweeper has run.
            let coderInbox = await inbox(coder);
            for (let tries = 0; answer !== undefined && tries < 400; tries++) {
              if (updatesFor(coderInbox, sent.requestId).length > 0) break;
              await sleep(25);
              coderInbox = await inbox(coder);
            }
            const r = await requestRecord(t.lead, sent.requestId);
            const responses = coderInbox.filter(
              (e) => e.requestId === sent.requestId && kindOf(e.message) === "planApprovalResponse",
            );
            const updates = updatesFor(coderInbox, sent.requestId);
            if (answer === undefined) {
              expect(r.status, `round ${i}`).toBe(
                approve ? RequestStatus.APPROVED : RequestStatus.REJECTED,
              );
              expect(kindOf(r.response)).toBe("planApprovalResponse");
              expect(responses, `round ${i}`).toHaveLength(1);
              expect(updates, `round ${i}`).toHaveLength(0);
              return "answered";
            }
            const refusal = await refused(() => Promise.reject(answer));
            expect(refusal.code, `round ${i}: ${refusal.message}`).toBe(Code.FailedPrecondition);
            expect(refusal.message).toMatch(/^once-only: /);
            expect(refusal.detail?.rule).toBe("once-only");
            expect(r.status, `round ${i}`).toBe(RequestStatus.EXPIRED);
            expect(r.response).toBeUndefined();
            expect(responses, `round ${i}`).toHaveLength(0);
            expect(updates, `round ${i}`).toHaveLength(1);
            expect(updates[0]?.message?.kind.value).toMatchObject({
              requestId: sent.requestId,
              kind: RequestKind.PLAN_APPROVAL,
              status: RequestStatus.EXPIRED,
            });
            return "expired";
          }),
        );
        expect(outcomes).toHaveLength(rounds);
        // The window was hit from both sides: some answers won, some expiries did.
        expect(new Set(outcomes), outcomes.join(",")).toEqual(new Set(["answered", "expired"]));
      });
    });
  },
  // The app's default sweep interval (no sweepIntervalMs), small per-kind default ttls.
  {
    protocols: {
      defaultTtlMs: {
        ...defaultProtocolConfig.defaultTtlMs,
        shutdown: SHUTDOWN_DEFAULT_MS,
        plan_approval: PLAN_DEFAULT_MS,
      },
    },
  },
);

describeEachDatabase(
  "request deadlines: an expired record is final (sweeper run by hand)",
  (env) => {
    // Before the sweeper runs, a request past its deadline already reads as EXPIRED with
    // resolved_at = expires_at; the sweep that then moves the row must store that same
    // resolved_at (expires_at), so the final record never changes once a reader saw it.
    it("resolved_at of an expired request does not change when the sweeper catches up", async () => {
      const t = await env().team("alice");
      const sent = await t.lead.send({
        to: "alice",
        message: shutdownRequest(),
        ttl: { seconds: 1n },
      });
      const before = await pollStatus(t.lead, sent.requestId, RequestStatus.EXPIRED);
      expect(before.status).toBe(RequestStatus.EXPIRED);
      expect(before.resolvedAt, "resolved_at before the sweep").toEqual(before.expiresAt);
      // No wait for the clock to move: the record read as expired, so the database's clock
      // is already past expires_at, and a sweep that stored its own now() (or
      // clock_timestamp()) as resolved_at would store a later stamp than expires_at.
      expect(await env().app.sweeper.sweep()).toBeGreaterThanOrEqual(1);
      const after = await requestRecord(t.lead, sent.requestId);
      expect(after.status).toBe(RequestStatus.EXPIRED);
      expect(updatesFor(await inbox(t.lead), sent.requestId)).toHaveLength(1);
      expect(after.resolvedAt, "resolved_at after the sweep").toEqual(after.expiresAt);
      expect(after.resolvedAt, "resolved_at changed after the sweep").toEqual(before.resolvedAt);
    });
  },
  // No timer sweeps during this suite: the test sweeps by hand.
  { sweepIntervalMs: 3_600_000 },
);

/** Makes `n` more overdue pending copies of a request (and the request itself overdue). */
async function overdueCopies(env: TestEnv, requestId: string, n: number): Promise<void> {
  await env.db.query(
    `INSERT INTO requests (id, team_id, kind, from_id, to_id, request_body, created_at, expires_at)
     SELECT id || '_' || g, team_id, kind, from_id, to_id, request_body,
            clock_timestamp() - interval '2 minutes', clock_timestamp() - interval '1 minute'
     FROM requests, generate_series(1, $2::int) AS g WHERE id = $1`,
    [requestId, n],
  );
  await env.db.query(
    `UPDATE requests SET created_at = clock_timestamp() - interval '2 minutes',
                         expires_at = clock_timestamp() - interval '1 minute' WHERE id = $1`,
    [requestId],
  );
}

/** Resolves when `w` has seen what `check` looks for; fails after 10 s (no heartbeat here). */
const seenWithin = (w: Watcher, what: string, check: (w: Watcher) => boolean) =>
  Promise.race([
    w.until(what, check),
    sleep(10_000).then(() => {
      throw new Error(`not seen within 10 s: ${what}`);
    }),
  ]);

/**
 * The expiry sweeper (protocols/expiry-sweeper.ts), run by hand: how much one sweep does,
 * whom it wakes, an expiry of a request whose requester has stopped since, and that a
 * stopped sweeper does nothing more (the last test: it stops this suite's sweeper).
 */
describeEachDatabase(
  "the expiry sweeper, run by hand",
  (env) => {
    it("one sweep expires at most 500 requests; the next sweep the rest", async () => {
      const t = await env().team("alice");
      const sent = await t.lead.send({
        to: "alice",
        message: shutdownRequest(),
        ttl: { seconds: 60n },
      });
      await overdueCopies(env(), sent.requestId, 500);
      expect(await env().app.sweeper.sweep()).toBe(500);
      expect(await env().app.sweeper.sweep()).toBe(1);
      expect(await env().app.sweeper.sweep()).toBe(0);
      expect(updatesFor(await inbox(t.lead), sent.requestId)).toHaveLength(1);
    });

    it("an expiry reaches the team's open WatchTeam stream live, as the request now expired", async () => {
      const t = await env().team("alice");
      const sent = await t.lead.send({
        to: "alice",
        message: shutdownRequest(),
        ttl: { seconds: 60n },
      });
      const w = watch(t.lead);
      await watchersParked(env().app, 1);
      await overdueCopies(env(), sent.requestId, 0);
      expect(await env().app.sweeper.sweep()).toBe(1);
      await seenWithin(w, "the expired request in the feed", (x) =>
        x
          .events()
          .some(
            (e) =>
              e.change.case === "request" &&
              e.change.value.request?.requestId === sent.requestId &&
              e.change.value.request.status === RequestStatus.EXPIRED,
          ),
      );
      w.stop();
    });

    it("a request whose requester was removed after its deadline is expired all the same, and the rest of the sweep goes on", async () => {
      const t = await env().team("alice", "bob");
      // alice's request is past its deadline when she is removed: her stop leaves it to the
      // sweeper (cancel.ts), and she, stopped, is told nothing.
      const gone = await t.member("alice").client.send({
        to: "team-lead",
        message: planRequest("p"),
        ttl: { seconds: 60n },
      });
      await overdueCopies(env(), gone.requestId, 0);
      await t.lead.removeMember({ name: "alice" });
      const other = await t.member("bob").client.send({
        to: "team-lead",
        message: planRequest("q"),
        ttl: { seconds: 60n },
      });
      await overdueCopies(env(), other.requestId, 0);
      expect(await env().app.sweeper.sweep()).toBe(2);
      for (const id of [gone.requestId, other.requestId]) {
        expect((await requestRecord(t.lead, id)).status).toBe(RequestStatus.EXPIRED);
      }
      expect(updatesFor(await inbox(t.member("bob").client), other.requestId)).toHaveLength(1);
    });

    it("once stopped, a sweep expires nothing and deletes no lapsed lease (the server is closing)", async () => {
      const t = await env().team("alice");
      const sent = await t.lead.send({
        to: "alice",
        message: shutdownRequest(),
        ttl: { seconds: 60n },
      });
      await overdueCopies(env(), sent.requestId, 0);
      const { lease } = await t.member("alice").client.acquireLease({
        resource: "src/**",
        mode: LeaseMode.EXCLUSIVE,
      });
      await sleep(400);
      await env().app.sweeper.stop();
      expect(await env().app.sweeper.sweep()).toBe(0);
      const [row] = await env().db.query<{ status: string }>(
        "SELECT status FROM requests WHERE id = $1",
        [sent.requestId],
      );
      expect(row?.status).toBe("pending");
      const [held] = await env().db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM leases WHERE lease_id = $1",
        [lease?.leaseId],
      );
      expect(held?.n).toBe(1n);
      expect(await inbox(t.lead)).toEqual([]);
    });
  },
  {
    sweepIntervalMs: 3_600_000,
    heartbeatIntervalMs: 60_000,
    leaseTtls: { defaultMs: 200, maxMs: 60_000 },
  },
);

/** What the sweeper's timer logs of a sweep that fails: one line each, and it goes on. */
const logged: Record<string, unknown>[] = [];
const capturing = pino(
  { level: "error" },
  {
    write(line: string) {
      logged.push(JSON.parse(line));
    },
  },
);

describeEachDatabase(
  "the expiry sweeper's failures",
  (env) => {
    it("a sweep that fails is logged as sweep_failed with its error; the next ticks expire again", async () => {
      logged.length = 0;
      const t = await env().team("alice");
      await env().db.query("ALTER TABLE leases RENAME TO leases_away");
      try {
        await waitFor("a sweep_failed line", () => logged.some((l) => l.event === "sweep_failed"));
      } finally {
        await env().db.query("ALTER TABLE leases_away RENAME TO leases");
      }
      expect(logged.find((l) => l.event === "sweep_failed")).toMatchObject({
        level: 50,
        msg: "request expiry sweep failed",
        err: expect.objectContaining({ message: expect.stringContaining("leases") }),
      });
      const sent = await t.lead.send({
        to: "alice",
        message: shutdownRequest(),
        ttl: { seconds: 1n },
      });
      expect(await updatesWithin(t.lead, sent.requestId)).toHaveLength(1);
    });
  },
  { sweepIntervalMs: 50, logger: capturing },
);
