import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { MemberStatus, RequestKind, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { Envelope, RequestRecord } from "../../gen/team/v1/records_pb.js";
import type { Database, Queryable } from "../../server/store/database.js";
import { deleteTeamRows } from "../../server/store/members.js";
import { finishRequest } from "../../server/store/requests.js";
import { databaseKinds, openTestDatabase } from "../support/databases.js";
import { describeEachDatabase, startTestEnv, type TeamClient } from "../support/harness.js";
import {
  inbox,
  kindOf,
  planRequest,
  planResponse,
  pollStatus,
  refused,
  requestRecord,
  shutdownRequest,
  shutdownResponse,
} from "../support/protocol-helpers.js";
import { awaitingAtMost, awaitingBeyond } from "../support/subscribed.js";
import { sleep, waitFor } from "../support/wait.js";

/** The shortest ttl the server accepts. */
const ONE_SECOND = { seconds: 1n };

/** A well-formed request id that no request has. */
const UNKNOWN_ID = `req_${"A".repeat(22)}`;

/** Polls a member's inbox until `done` says so (or `withinMs` passes); returns the last read. */
async function pollInbox(
  client: TeamClient,
  done: (envelopes: Envelope[]) => boolean,
  withinMs = 5_000,
): Promise<Envelope[]> {
  const until = Date.now() + withinMs;
  for (;;) {
    const envelopes = await inbox(client);
    if (done(envelopes) || Date.now() > until) return envelopes;
    await sleep(50);
  }
}

/** The request_update envelopes about one request. */
const updatesFor = (envelopes: Envelope[], requestId: string) =>
  envelopes.filter((e) => e.requestId === requestId && kindOf(e.message) === "requestUpdate");

const hasUpdateFor = (requestId: string) => (envelopes: Envelope[]) =>
  updatesFor(envelopes, requestId).length > 0;

/**
 * Holds a request's row lock from another connection (as an answer or an expiry in progress
 * would), until `release` is called; `then` runs in that transaction just before it commits.
 */
async function holdRequestRow(
  db: Database,
  requestId: string,
  then?: (tx: Queryable) => Promise<void>,
) {
  let release = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  let holding = () => {};
  const held = new Promise<void>((r) => {
    holding = r;
  });
  const holder = db.transaction(async (tx) => {
    await tx.query("SELECT 1 FROM requests WHERE id = $1 FOR UPDATE", [requestId]);
    holding();
    await released;
    await then?.(tx);
  });
  await held;
  return {
    /** Resolves once a statement of this database waits for a row lock on requests. */
    waitedOn: () =>
      waitFor("a statement waiting for the request's row lock", async () => {
        const [row] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'
             AND query ILIKE '%requests%'`,
        );
        return (row?.n ?? 0) > 0;
      }),
    commit: async () => {
      release();
      await holder;
    },
  };
}

/** Unwraps an AwaitRequest / CancelRequest answer. */
function recordOf(res: { request?: RequestRecord | undefined }): RequestRecord {
  if (!res.request) throw new Error("the response carries no record");
  return res.request;
}

describeEachDatabase(
  "requests: GetRequest, ListRequests, AwaitRequest, CancelRequest",
  (env, kind) => {
    describe("GetRequest", () => {
      it("shows a request to its requester, its addressee and the lead; refuses a third teammate (PermissionDenied), another team (NotFound) and a malformed id (size-shape)", async () => {
        const t = await env().team("alice", "bob");
        const alice = t.member("alice").client;
        const bob = t.member("bob").client;
        const other = await env().team("mallory");

        // A plan from alice to the lead: alice asks, the lead answers, bob is a bystander.
        const sent = await alice.send({ to: "team-lead", message: planRequest("refactor io") });
        for (const viewer of [alice, t.lead]) {
          const r = await requestRecord(viewer, sent.requestId);
          expect(r).toMatchObject({
            requestId: sent.requestId,
            kind: RequestKind.PLAN_APPROVAL,
            team: t.name,
            from: "alice",
            to: "team-lead",
            status: RequestStatus.PENDING,
          });
          expect(r.request?.kind).toEqual({
            case: "planApprovalRequest",
            value: expect.objectContaining({ plan: "refactor io" }),
          });
          expect(r.response).toBeUndefined();
          expect(r.resolvedAt).toBeUndefined();
          expect(r.createdAt).toBeDefined();
          expect(r.expiresAt).toBeDefined();
        }

        // A shutdown from the lead to bob: the addressee (not the lead) sees it too.
        const shut = await t.lead.send({ to: "bob", message: shutdownRequest("done") });
        expect(await requestRecord(bob, shut.requestId)).toMatchObject({
          from: "team-lead",
          to: "bob",
          kind: RequestKind.SHUTDOWN,
        });

        const bystander = await refused(() => bob.getRequest({ requestId: sent.requestId }));
        expect(bystander.code).toBe(Code.PermissionDenied);
        const bystander2 = await refused(() => alice.getRequest({ requestId: shut.requestId }));
        expect(bystander2.code).toBe(Code.PermissionDenied);

        for (const stranger of [other.lead, other.member("mallory").client]) {
          const r = await refused(() => stranger.getRequest({ requestId: sent.requestId }));
          expect(r.code).toBe(Code.NotFound);
        }
        const unknown = await refused(() => t.lead.getRequest({ requestId: UNKNOWN_ID }));
        expect(unknown.code).toBe(Code.NotFound);

        for (const requestId of ["", "req_short", "not-a-request-id", `${sent.requestId}x`]) {
          const r = await refused(() => t.lead.getRequest({ requestId }));
          expect(r.code).toBe(Code.InvalidArgument);
          expect(r.message).toMatch(/^size-shape: /);
          expect(r.detail).toMatchObject({ rule: "size-shape", field: "request_id" });
        }
      });
    });

    describe("ListRequests", () => {
      /** Five requests, oldest first: r1..r5, two of them answered. */
      async function fiveRequests() {
        const t = await env().team("alice", "bob", "carol");
        const alice = t.member("alice").client;
        const bob = t.member("bob").client;
        const carol = t.member("carol").client;
        const r1 = (await t.lead.send({ to: "alice", message: shutdownRequest() })).requestId;
        const r2 = (await alice.send({ to: "team-lead", message: planRequest("a") })).requestId;
        const r3 = (await bob.send({ to: "team-lead", message: planRequest("b") })).requestId;
        const r4 = (await t.lead.send({ to: "bob", message: shutdownRequest() })).requestId;
        const r5 = (await carol.send({ to: "team-lead", message: planRequest("c") })).requestId;
        await t.lead.send({ to: "alice", message: planResponse(r2, true) });
        await t.lead.send({ to: "bob", message: planResponse(r3, false, "no") });
        return { t, alice, bob, carol, ids: { r1, r2, r3, r4, r5 } };
      }

      const ids = (res: { requests: RequestRecord[] }) => res.requests.map((r) => r.requestId);

      it("the lead sees every request of the team, newest first; a teammate sees only its own", async () => {
        const { t, alice, bob, carol, ids: r } = await fiveRequests();
        const all = await t.lead.listRequests({});
        expect(ids(all)).toEqual([r.r5, r.r4, r.r3, r.r2, r.r1]);
        expect(all.nextPageToken).toBe("");
        expect(all.requests.map((x) => x.status)).toEqual([
          RequestStatus.PENDING,
          RequestStatus.PENDING,
          RequestStatus.REJECTED,
          RequestStatus.APPROVED,
          RequestStatus.PENDING,
        ]);
        expect(ids(await alice.listRequests({}))).toEqual([r.r2, r.r1]);
        expect(ids(await bob.listRequests({}))).toEqual([r.r4, r.r3]);
        expect(ids(await carol.listRequests({}))).toEqual([r.r5]);
        // Another team's lead sees none of them.
        const other = await env().team();
        expect((await other.lead.listRequests({})).requests).toEqual([]);
      });

      it("filters by status, kind and party; a party naming no member is NotFound", async () => {
        const { t, alice, ids: r } = await fiveRequests();
        expect(ids(await t.lead.listRequests({ status: RequestStatus.PENDING }))).toEqual([
          r.r5,
          r.r4,
          r.r1,
        ]);
        expect(ids(await t.lead.listRequests({ status: RequestStatus.APPROVED }))).toEqual([r.r2]);
        expect(ids(await t.lead.listRequests({ status: RequestStatus.REJECTED }))).toEqual([r.r3]);
        expect(ids(await t.lead.listRequests({ status: RequestStatus.EXPIRED }))).toEqual([]);
        expect(ids(await t.lead.listRequests({ kind: RequestKind.SHUTDOWN }))).toEqual([
          r.r4,
          r.r1,
        ]);
        expect(ids(await t.lead.listRequests({ kind: RequestKind.PLAN_APPROVAL }))).toEqual([
          r.r5,
          r.r3,
          r.r2,
        ]);
        expect(ids(await t.lead.listRequests({ party: "alice" }))).toEqual([r.r2, r.r1]);
        expect(ids(await t.lead.listRequests({ party: "team-lead" }))).toEqual([
          r.r5,
          r.r4,
          r.r3,
          r.r2,
          r.r1,
        ]);
        expect(
          ids(
            await t.lead.listRequests({
              party: "bob",
              kind: RequestKind.SHUTDOWN,
              status: RequestStatus.PENDING,
            }),
          ),
        ).toEqual([r.r4]);
        // A teammate's party filter narrows its own view; it never widens it.
        expect(ids(await alice.listRequests({ party: "alice" }))).toEqual([r.r2, r.r1]);
        expect(ids(await alice.listRequests({ party: "team-lead" }))).toEqual([r.r2, r.r1]);
        expect(ids(await alice.listRequests({ party: "bob" }))).toEqual([]);
        expect(ids(await alice.listRequests({ status: RequestStatus.PENDING }))).toEqual([r.r1]);

        const nobody = await refused(() => t.lead.listRequests({ party: "nobody" }));
        expect(nobody.code).toBe(Code.NotFound);
        const nobody2 = await refused(() => alice.listRequests({ party: "nobody" }));
        expect(nobody2.code).toBe(Code.NotFound);
        const badName = await refused(() => t.lead.listRequests({ party: "Not A Name" }));
        expect(badName.code).toBe(Code.InvalidArgument);
        expect(badName.detail).toMatchObject({ rule: "size-shape", field: "party" });
      });

      it("page_size 2 walks all five records exactly once and ends with an empty token; a bogus page_token is InvalidArgument", async () => {
        const { t, alice, ids: r } = await fiveRequests();
        const pages: string[][] = [];
        let pageToken = "";
        for (let i = 0; i < 10; i++) {
          const page = await t.lead.listRequests({ pageSize: 2, pageToken });
          expect(page.requests.length).toBeLessThanOrEqual(2);
          pages.push(ids(page));
          pageToken = page.nextPageToken;
          if (pageToken === "") break;
        }
        expect(pages).toEqual([[r.r5, r.r4], [r.r3, r.r2], [r.r1]]);
        expect(pageToken).toBe("");

        // A page that ends exactly at the last record says so: no empty extra page.
        const exact = await alice.listRequests({ pageSize: 2 });
        expect(ids(exact)).toEqual([r.r2, r.r1]);
        expect(exact.nextPageToken).toBe("");

        // Filters keep applying across pages.
        const first = await t.lead.listRequests({ pageSize: 1, kind: RequestKind.SHUTDOWN });
        expect(ids(first)).toEqual([r.r4]);
        expect(first.nextPageToken).not.toBe("");
        const second = await t.lead.listRequests({
          pageSize: 1,
          kind: RequestKind.SHUTDOWN,
          pageToken: first.nextPageToken,
        });
        expect(ids(second)).toEqual([r.r1]);
        expect(second.nextPageToken).toBe("");

        for (const bogus of ["not-a-token", "-1", "12a", "1".repeat(30)]) {
          const e = await refused(() => t.lead.listRequests({ pageToken: bogus }));
          expect(e.code, `page_token ${JSON.stringify(bogus)}`).toBe(Code.InvalidArgument);
        }
      });

      // Page tokens are bigint positions: a 19-digit value above the bigint maximum
      // (9223372036854775807) is refused by the handler as InvalidArgument before it reaches
      // the SQL (where it would fail as "out of range for type bigint", i.e. Internal).
      it("a 19-digit page_token beyond the bigint range is InvalidArgument, not Internal", async () => {
        const t = await env().team();
        for (const bogus of ["9223372036854775808", "9999999999999999999"]) {
          const e = await refused(() => t.lead.listRequests({ pageToken: bogus }));
          expect(e.code, `page_token ${bogus}: ${e.message}`).toBe(Code.InvalidArgument);
        }
        // The bigint maximum itself is a valid position: every request lies before it.
        const t2 = await env().team("alice");
        const sent = await t2.lead.send({ to: "alice", message: shutdownRequest() });
        const page = await t2.lead.listRequests({ pageToken: "9223372036854775807" });
        expect(page.requests.map((r) => r.requestId)).toEqual([sent.requestId]);
      });
    });

    describe("AwaitRequest", () => {
      it("returns the approved record once another call answers it", async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const sent = await alice.send({ to: "team-lead", message: planRequest("ship it") });
        const before = env().app.waiters.size;
        const waiting = alice.awaitRequest({ requestId: sent.requestId });
        // Answered only once the call is known to wait: it returns because of the answer.
        await awaitingBeyond(env().app, before);
        await t.lead.send({ to: "alice", message: planResponse(sent.requestId, true, "go") });
        const got = recordOf(await waiting);
        // Not its 60 s default (which would return the pending record): the answer woke it.
        expect(got.status).toBe(RequestStatus.APPROVED);
        expect(got.response?.kind).toEqual({
          case: "planApprovalResponse",
          value: expect.objectContaining({ approve: true, feedback: "go" }),
        });
      });

      it("a caller that goes away (cancels its call) stops waiting at once, over every protocol", async () => {
        // gRPC is served on the bare stream, where the call's signal is made only when the
        // handler first asks for it (grpc/grpc-call.ts): the reset must still reach it.
        for (const protocol of ["grpc", "connect", "grpc-web"] as const) {
          const t = await env().team("alice");
          const sent = await t.member("alice").client.send({
            to: "team-lead",
            message: planRequest("x"),
          });
          const before = env().app.waiters.size;
          const cancel = new AbortController();
          const waiting = env()
            .client(t.member("alice").token, protocol)
            .awaitRequest({ requestId: sent.requestId }, { signal: cancel.signal })
            .catch((err: unknown) => err);
          await awaitingBeyond(env().app, before);
          cancel.abort();
          expect(await waiting, protocol).toBeInstanceOf(Error);
          // Released by the server, not by the request's 60 s default.
          await awaitingAtMost(env().app, before);
        }
      });

      it("returns a request that is no longer pending at once", async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const sent = await alice.send({ to: "team-lead", message: planRequest("x") });
        await t.lead.send({ to: "alice", message: planResponse(sent.requestId, false) });
        const got = recordOf(await t.lead.awaitRequest({ requestId: sent.requestId }));
        expect(got.status).toBe(RequestStatus.REJECTED);
      });

      it("with a 0.3 s timeout returns the still-pending record", async () => {
        const t = await env().team("alice");
        const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
        const got = recordOf(
          await t.member("alice").client.awaitRequest({
            requestId: sent.requestId,
            timeout: { seconds: 0n, nanos: 300_000_000 },
          }),
        );
        expect(got.status).toBe(RequestStatus.PENDING);
        expect(got.requestId).toBe(sent.requestId);
      });

      it("with a call deadline shorter than its timeout returns the pending record, not DeadlineExceeded", async () => {
        const t = await env().team("alice");
        const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
        const got = recordOf(
          await t.lead.awaitRequest(
            { requestId: sent.requestId, timeout: { seconds: 30n } },
            { timeoutMs: 500 },
          ),
        );
        expect(got.status).toBe(RequestStatus.PENDING);
        // And with no timeout at all (default 60 s), the deadline still wins.
        const bare = recordOf(
          await t.lead.awaitRequest({ requestId: sent.requestId }, { timeoutMs: 500 }),
        );
        expect(bare.status).toBe(RequestStatus.PENDING);
      });

      it("returns EXPIRED for a request that expires while awaited", async () => {
        const t = await env().team("alice");
        const sent = await t.lead.send({
          to: "alice",
          message: shutdownRequest(),
          ttl: ONE_SECOND,
        });
        const got = recordOf(await t.lead.awaitRequest({ requestId: sent.requestId }));
        expect(got.status).toBe(RequestStatus.EXPIRED);
        expect(got.resolvedAt).toBeDefined();
        expect(got.response).toBeUndefined();
      });

      it("is refused to a third teammate, to another team and for a malformed id", async () => {
        const t = await env().team("alice", "bob");
        const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
        const bob = await refused(() =>
          t.member("bob").client.awaitRequest({ requestId: sent.requestId }),
        );
        expect(bob.code).toBe(Code.PermissionDenied);
        const other = await env().team();
        const stranger = await refused(() =>
          other.lead.awaitRequest({ requestId: sent.requestId }),
        );
        expect(stranger.code).toBe(Code.NotFound);
        const bad = await refused(() => t.lead.awaitRequest({ requestId: "req_nope" }));
        expect(bad.code).toBe(Code.InvalidArgument);
        expect(bad.detail?.rule).toBe("size-shape");
      });
    });

    describe("CancelRequest", () => {
      it("only the requester cancels; the addressee is told; a later answer is refused once-only; a second cancel is refused", async () => {
        const t = await env().team("alice", "bob");
        const alice = t.member("alice").client;
        const bob = t.member("bob").client;
        const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });

        for (const [who, client] of [
          ["addressee", alice],
          ["bystander", bob],
        ] as const) {
          const e = await refused(() => client.cancelRequest({ requestId: sent.requestId }));
          expect(e.code, who).toBe(Code.PermissionDenied);
          expect(e.message).toBe(
            `requester-only: only "team-lead", who sent request ${sent.requestId}, may cancel it`,
          );
          expect([e.detail?.rule, e.detail?.field]).toEqual(["requester-only", "request_id"]);
        }
        expect((await requestRecord(t.lead, sent.requestId)).status).toBe(RequestStatus.PENDING);

        const canceled = recordOf(await t.lead.cancelRequest({ requestId: sent.requestId }));
        expect(canceled).toMatchObject({
          requestId: sent.requestId,
          status: RequestStatus.CANCELED,
          from: "team-lead",
          to: "alice",
        });
        expect(canceled.resolvedAt).toBeDefined();
        expect(canceled.response).toBeUndefined();
        expect((await requestRecord(alice, sent.requestId)).status).toBe(RequestStatus.CANCELED);

        const aliceInbox = await inbox(alice);
        expect(aliceInbox.map((e) => kindOf(e.message))).toEqual([
          "shutdownRequest",
          "requestUpdate",
        ]);
        expect(aliceInbox[1]).toMatchObject({ from: "", to: "alice", requestId: sent.requestId });
        expect(aliceInbox[1]?.message?.kind.value).toMatchObject({
          requestId: sent.requestId,
          kind: RequestKind.SHUTDOWN,
          status: RequestStatus.CANCELED,
          detail: `"team-lead" canceled request ${sent.requestId}; no answer is needed`,
        });
        // Stored as a request_update: searching the history by that kind finds the notice.
        const found = await alice.searchMessages({ query: "canceled", kind: "request_update" });
        expect(found.hits.map((h) => h.envelope?.seq)).toEqual([aliceInbox[1]?.seq]);

        const late = await refused(() =>
          alice.send({ to: "team-lead", message: shutdownResponse(sent.requestId, true) }),
        );
        expect(late.code).toBe(Code.FailedPrecondition);
        expect(late.message).toMatch(/^once-only: /);
        expect(late.message).toContain("canceled");
        expect(late.detail?.rule).toBe("once-only");
        // The refused approval neither stopped alice nor reached the lead.
        expect(await inbox(t.lead)).toEqual([]);
        expect((await alice.listMembers({})).members.length).toBe(3);

        const twice = await refused(() => t.lead.cancelRequest({ requestId: sent.requestId }));
        expect(twice.code).toBe(Code.FailedPrecondition);
        expect([twice.detail?.rule, twice.detail?.field]).toEqual(["once-only", "request_id"]);
        expect(twice.message).toBe(
          `once-only: request ${sent.requestId} is already canceled; only a pending request can be canceled`,
        );
        expect(await inbox(alice)).toEqual(aliceInbox);
      });

      it("a teammate cancels its own plan; the lead may not cancel it, and is told when it is canceled", async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const sent = await alice.send({ to: "team-lead", message: planRequest("p") });
        const byLead = await refused(() => t.lead.cancelRequest({ requestId: sent.requestId }));
        expect(byLead.code).toBe(Code.PermissionDenied);
        expect(byLead.detail?.rule).toBe("requester-only");

        expect(recordOf(await alice.cancelRequest({ requestId: sent.requestId })).status).toBe(
          RequestStatus.CANCELED,
        );
        const leadInbox = await inbox(t.lead);
        expect(updatesFor(leadInbox, sent.requestId).map((e) => e.message?.kind.value)).toEqual([
          expect.objectContaining({ status: RequestStatus.CANCELED }),
        ]);
        const late = await refused(() =>
          t.lead.send({ to: "alice", message: planResponse(sent.requestId, true) }),
        );
        expect(late.code).toBe(Code.FailedPrecondition);
        expect(late.message).toContain("canceled");
        expect(await inbox(alice)).toEqual([]);
      });

      it("a member stopped a moment ago cancels nothing, even where its token is still cached", async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const sent = await alice.send({ to: "team-lead", message: planRequest("p") });
        // Stopped by hand in SQL: nothing tells this server's caller cache (as when another
        // replica stopped alice a moment ago), so her token is still trusted for a while.
        await env().db.query(
          `UPDATE members SET status = 'stopped' WHERE name = 'alice'
             AND team_id = (SELECT id FROM teams WHERE name = $1)`,
          [t.name],
        );
        expect((await alice.listMembers({})).members.length).toBeGreaterThan(0); // cached: stale
        const stale = await refused(() => alice.cancelRequest({ requestId: sent.requestId }));
        expect(stale.code).toBe(Code.Unauthenticated);
        expect(stale.message).toMatch(/token revoked/);
        expect((await requestRecord(t.lead, sent.requestId)).status).toBe(RequestStatus.PENDING);
      });

      it("a member whose team was deleted a moment ago (its row gone, its token still cached) cancels nothing: token revoked", async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const sent = await alice.send({ to: "team-lead", message: planRequest("p") });
        expect((await alice.listMembers({})).members.length).toBeGreaterThan(0); // token cached
        // Deleted in the store, as DeleteTeam on another replica would: nothing tells this
        // server's caller cache, so alice's token is still trusted for a while.
        const [team] = await env().db.query<{ id: number }>(
          "SELECT id FROM teams WHERE name = $1",
          [t.name],
        );
        await env().db.transaction((tx) => deleteTeamRows(tx, team?.id ?? 0));
        const gone = await refused(() => alice.cancelRequest({ requestId: sent.requestId }));
        expect([gone.code, gone.message]).toEqual([
          Code.Unauthenticated,
          "token revoked: this member no longer exists (its team was deleted)",
        ]);
      });

      it.skipIf(kind !== "postgres")(
        "a cancel waits for the request's row: an answer committed meanwhile is named in the once-only refusal [postgres]",
        async () => {
          const t = await env().team("alice");
          const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
          // An answer in progress holds the row; the cancel must read the request only once
          // the answer committed, or it refuses naming a state the request never had.
          const answer = await holdRequestRow(env().db, sent.requestId, async (tx) => {
            expect(await finishRequest(tx, sent.requestId, "rejected", null)).toBe(true);
          });
          const canceling = refused(() => t.lead.cancelRequest({ requestId: sent.requestId }));
          await answer.waitedOn();
          await answer.commit();
          const e = await canceling;
          expect([e.code, e.message]).toEqual([
            Code.FailedPrecondition,
            `once-only: request ${sent.requestId} is already rejected; only a pending request can be canceled`,
          ]);
        },
      );

      it.skipIf(kind !== "postgres")(
        "a request whose deadline passes while its cancel waits for the row is refused as expired, not canceled [postgres]",
        async () => {
          const t = await env().team("alice");
          const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
          await env().db.query(
            "UPDATE requests SET expires_at = clock_timestamp() + interval '2 seconds' WHERE id = $1",
            [sent.requestId],
          );
          const held = await holdRequestRow(env().db, sent.requestId);
          // The cancel reads the request while it is still pending, then waits for the row.
          const canceling = refused(() => t.lead.cancelRequest({ requestId: sent.requestId }));
          await held.waitedOn();
          await waitFor("the request's deadline to pass", async () => {
            const [row] = await env().db.query<{ past: boolean }>(
              "SELECT expires_at <= clock_timestamp() AS past FROM requests WHERE id = $1",
              [sent.requestId],
            );
            return row?.past === true;
          });
          await held.commit();
          const e = await canceling;
          expect([e.code, e.message]).toEqual([
            Code.FailedPrecondition,
            `once-only: request ${sent.requestId} is already expired; only a pending request can be canceled`,
          ]);
          expect((await requestRecord(t.lead, sent.requestId)).status).toBe(RequestStatus.EXPIRED);
        },
      );

      it.skipIf(kind !== "postgres")(
        "an answer whose request's deadline passes while it waits for the row is refused as expired, and neither stored nor acted on [postgres]",
        async () => {
          const t = await env().team("alice");
          const alice = t.member("alice").client;
          const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
          await env().db.query(
            "UPDATE requests SET expires_at = clock_timestamp() + interval '2 seconds' WHERE id = $1",
            [sent.requestId],
          );
          const held = await holdRequestRow(env().db, sent.requestId);
          // The answer reads the request while it is still pending, then waits for the row.
          const answering = refused(() =>
            alice.send({ to: "team-lead", message: shutdownResponse(sent.requestId, true) }),
          );
          await held.waitedOn();
          await waitFor("the request's deadline to pass", async () => {
            const [row] = await env().db.query<{ past: boolean }>(
              "SELECT expires_at <= clock_timestamp() AS past FROM requests WHERE id = $1",
              [sent.requestId],
            );
            return row?.past === true;
          });
          await held.commit();
          const e = await answering;
          expect([e.code, e.message, e.detail?.field]).toEqual([
            Code.FailedPrecondition,
            `once-only: request ${sent.requestId} is already expired; a request is answered once`,
            "message.request_id",
          ]);
          expect((await requestRecord(t.lead, sent.requestId)).status).toBe(RequestStatus.EXPIRED);
          // The approval was not carried out: alice is still active and her token works.
          expect(
            (await inbox(t.lead)).filter((m) => kindOf(m.message) === "shutdownResponse"),
          ).toEqual([]);
          expect(
            (await alice.listMembers({})).members.find((m) => m.name === "alice")?.status,
          ).toBe(MemberStatus.ACTIVE);
        },
      );

      it("an unknown id, or another team's, is NotFound (unknown-request)", async () => {
        const t = await env().team("alice");
        const other = await env().team();
        const sent = await t.lead.send({ to: "alice", message: shutdownRequest() });
        for (const [client, requestId] of [
          [t.lead, UNKNOWN_ID],
          [other.lead, sent.requestId],
        ] as const) {
          const e = await refused(() => client.cancelRequest({ requestId }));
          expect(e.code).toBe(Code.NotFound);
          expect(e.message).toBe(`unknown-request: no request ${requestId} in this team`);
          expect([e.detail?.rule, e.detail?.field]).toEqual(["unknown-request", "request_id"]);
        }
        expect((await requestRecord(t.lead, sent.requestId)).status).toBe(RequestStatus.PENDING);
      });
    });
  },
  { sweepIntervalMs: 50 },
);

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`requests survive a server restart [${kind}]`, () => {
    it("statuses, messages and tokens outlive the app; a pending request is answered after the restart", async () => {
      const testDb = await openTestDatabase(kind);
      try {
        const a = await startTestEnv(kind, testDb, { sweepIntervalMs: 50 });
        let shutdownId: string;
        let planId: string;
        let expiringId: string;
        let team: Awaited<ReturnType<typeof a.team>>;
        try {
          team = await a.team("alice", "bob", "carol");
          shutdownId = (
            await team.lead.send({ to: "alice", message: shutdownRequest("before restart") })
          ).requestId;
          planId = (
            await team.member("bob").client.send({
              to: "team-lead",
              message: planRequest("the plan"),
            })
          ).requestId;
          await team.lead.send({ to: "bob", message: planResponse(planId, false, "revise it") });
          // Its deadline passes while the first app is gone: only the database knows it.
          expiringId = (
            await team.lead.send({ to: "carol", message: shutdownRequest(), ttl: ONE_SECOND })
          ).requestId;
        } finally {
          await a.close();
        }

        const b = await startTestEnv(kind, testDb, { sweepIntervalMs: 50 });
        try {
          const lead = b.client(team.leadToken);
          const alice = b.client(team.member("alice").token);
          const bob = b.client(team.member("bob").token);

          const pending = await requestRecord(lead, shutdownId);
          expect(pending).toMatchObject({
            status: RequestStatus.PENDING,
            kind: RequestKind.SHUTDOWN,
            from: "team-lead",
            to: "alice",
          });
          expect(pending.request?.kind.value).toMatchObject({ reason: "before restart" });

          const rejected = await requestRecord(bob, planId);
          expect(rejected).toMatchObject({
            status: RequestStatus.REJECTED,
            kind: RequestKind.PLAN_APPROVAL,
            from: "bob",
            to: "team-lead",
          });
          expect(rejected.request?.kind.value).toMatchObject({ plan: "the plan" });
          expect(rejected.response?.kind).toEqual({
            case: "planApprovalResponse",
            value: expect.objectContaining({ approve: false, feedback: "revise it" }),
          });
          expect(rejected.resolvedAt).toBeDefined();

          // alice's token from before the restart still works, and her answer is accepted.
          const [asked] = await inbox(alice);
          expect(asked?.requestId).toBe(shutdownId);
          await alice.send({ to: "team-lead", message: shutdownResponse(shutdownId, true) });
          const approved = await requestRecord(lead, shutdownId);
          expect(approved.status).toBe(RequestStatus.APPROVED);
          expect(kindOf(approved.response)).toBe("shutdownResponse");

          // The new app's sweeper expires the request the old one opened, and tells the lead.
          const expired = await pollStatus(lead, expiringId, RequestStatus.EXPIRED);
          expect(expired.status).toBe(RequestStatus.EXPIRED);
          const leadInbox = await pollInbox(lead, hasUpdateFor(expiringId));
          expect(updatesFor(leadInbox, expiringId)).toHaveLength(1);
          expect(
            leadInbox.filter((e) => kindOf(e.message) === "shutdownResponse").map((e) => e.from),
          ).toEqual(["alice"]);

          expect(
            (await lead.listRequests({})).requests.map((r) => [r.requestId, r.status]),
          ).toEqual([
            [expiringId, RequestStatus.EXPIRED],
            [planId, RequestStatus.REJECTED],
            [shutdownId, RequestStatus.APPROVED],
          ]);
        } finally {
          await b.close();
        }
      } finally {
        await testDb.dispose();
      }
    });
  });
}
