import { randomBytes } from "node:crypto";
import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import type { Envelope, RequestRecord } from "../../gen/team/v1/records_pb.js";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import {
  describeEachDatabase,
  type Protocol,
  type TeamClient,
  type TestEnv,
  type TestTeam,
  uniqueName,
} from "../support/harness.js";
import { planRequest, planResponse, shutdownRequest, text } from "../support/protocol-helpers.js";
import { assign } from "../support/task-helpers.js";
import { describeDiff, diffSnapshots, snapshotTeam } from "../support/team-snapshot.js";

/**
 * Every TeamService RPC against every kind of bad credential, over every protocol the server
 * speaks: the exact code, and team A's stored rows unchanged afterwards (SQL snapshot).
 *
 * Each call carries a request aimed at team A (A's member names and request ids), so a call
 * that slipped past authentication would show up as a change to A's rows.
 */

const PROTOCOLS: Protocol[] = ["connect", "grpc", "grpc-web", "connect-h1"];
const M = TeamService.method;
// CreateTeam and ImportTeam make a new team: open, or the admin token's (tested below).
const memberMethods = TeamService.methods.filter((m) => m !== M.createTeam && m !== M.importTeam);

interface World {
  a: TestTeam;
  b: TestTeam;
  /** "gone" was a member of A and was removed: its token is revoked. */
  revokedToken: string;
  /** bob -> lead plan (pending), alice -> lead plan (pending), lead -> bob shutdown (pending). */
  bobPlan: string;
  alicePlan: string;
  bobShutdown: string;
  /** alice's exclusive lease on src/** in A. */
  aliceLease: string;
  /** The thread of the lead's text to alice in A. */
  aThread: string;
}

/** The request each RPC is called with: all of them name team A's members and requests. */
function requestAimedAtA(method: DescMethod, w: World, suffix: string): object {
  switch (method) {
    case M.createTeam:
      return { team: uniqueName(`new-${suffix}`) };
    case M.addMember:
      return { name: `intruder-${suffix}` };
    case M.removeMember:
      return { name: "alice" };
    case M.rotateToken:
      return { member: "alice" };
    case M.deleteTeam:
      return { team: w.a.name };
    case M.listMembers:
      return {};
    case M.send:
      return { to: "alice", message: text("hello from outside") };
    case M.subscribe:
      return { afterSeq: 0n };
    case M.readInbox:
      return { afterSeq: 0n, ack: true };
    case M.ack:
      // Seq 3 exists in A's lead inbox (alice's text, two plans), not in B's (one message).
      return { seq: 3n };
    case M.getRequest:
      return { requestId: w.bobPlan };
    case M.listRequests:
      return {};
    case M.awaitRequest:
      return { requestId: w.bobPlan, timeout: { seconds: 1n } };
    case M.cancelRequest:
      return { requestId: w.alicePlan };
    case M.listAttempts:
      return { member: "alice" };
    case M.watchTeam:
      return {};
    case M.getTask:
      // Bob holds it in A; B has no task of that id.
      return { taskId: "a-task" };
    case M.listTasks:
      return {};
    case M.createTask:
      // Waiting on A's task: a task of no other team.
      return { subject: `intruder-${suffix}`, blockedBy: ["a-task"] };
    case M.updateTask:
      return { taskId: "a-task", subject: "taken over" };
    case M.deleteTask:
      return { taskId: "a-task" };
    case M.acquireLease:
      return { resource: "src/**", ttlSeconds: 60 };
    case M.renewLease:
      return { leaseId: w.aliceLease, ttlSeconds: 60 };
    case M.releaseLease:
      return { leaseId: w.aliceLease, reason: "taken over" };
    case M.listLeases:
      return {};
    case M.getThread:
      return { threadId: w.aThread };
    case M.listThreads:
      return {};
    case M.searchMessages:
      return { query: "alice lead" };
    case M.exportTeam:
      return {};
    case M.importTeam:
      return { chunk: new Uint8Array() };
  }
  throw new Error(`no request for ${method.name}`);
}

/** A client stream of one message. */
async function* oneMessage<T>(message: T): AsyncGenerator<T> {
  yield message;
}

type Outcome = { ok: true; value: unknown; items: unknown[] } | { ok: false; err: ConnectError };

/** Calls any method; a server stream is read until its first heartbeat (or 50 items). */
async function call(
  client: TeamClient,
  method: DescMethod,
  request: object,
  headers?: Record<string, string>,
): Promise<Outcome> {
  const fn = (client as unknown as Record<string, (req: unknown, opts: unknown) => unknown>)[
    method.localName
  ];
  if (!fn) throw new Error(`client has no ${method.localName}`);
  const options = { headers, timeoutMs: 5_000 };
  try {
    const input = create(method.input, request as never);
    if (method.methodKind === "server_streaming") {
      const items: unknown[] = [];
      // Subscribe's oneof is `event`, WatchTeam's `kind`.
      for await (const item of fn.call(client, input, options) as AsyncIterable<{
        event?: { case: string | undefined };
        kind?: { case: string | undefined };
      }>) {
        if ((item.event ?? item.kind)?.case === "heartbeat" || items.length >= 50) break;
        items.push(item);
      }
      return { ok: true, value: undefined, items };
    }
    // A client stream (ImportTeam) gets the request as its one message.
    const sent = method.methodKind === "client_streaming" ? oneMessage(input) : input;
    return { ok: true, value: await fn.call(client, sent, options), items: [] };
  } catch (err) {
    return { ok: false, err: ConnectError.from(err) };
  }
}

const codeOf = (o: Outcome) => (o.ok ? "ok" : Code[o.err.code]);

describeEachDatabase(
  "token matrix",
  (env) => {
    let w: World;
    let aRows: Awaited<ReturnType<typeof snapshotTeam>>;

    const expectAUnchanged = async (after: string) => {
      const now = await snapshotTeam(env().db, w.a.name);
      expect(describeDiff(diffSnapshots(aRows, now)), `team A's rows after ${after}`).toEqual([]);
    };

    beforeAll(async () => {
      const a = await env().team("alice", "bob", "gone");
      const b = await env().team("carol");
      const alice = a.member("alice").client;
      const bob = a.member("bob").client;
      await a.lead.send({ to: "alice", message: text("a: lead to alice") });
      await alice.send({ to: "team-lead", message: text("a: alice to lead") });
      const bobPlan = (await bob.send({ to: "team-lead", message: planRequest("bob's plan") }))
        .requestId;
      const alicePlan = (await alice.send({ to: "team-lead", message: planRequest("alice's") }))
        .requestId;
      const bobShutdown = (await a.lead.send({ to: "bob", message: shutdownRequest("done") }))
        .requestId;
      await a.lead.send({ to: "bob", message: assign("a-task") });
      const aliceLease =
        (await alice.acquireLease({ resource: "src/**", ttlSeconds: 3600 })).lease?.leaseId ?? "";
      await a.lead.removeMember({ name: "gone" });
      await b.lead.send({ to: "carol", message: text("b: lead to carol") });
      await b.member("carol").client.send({ to: "team-lead", message: text("b: carol to lead") });
      const aThread =
        (await alice.readInbox({ afterSeq: 0n })).envelopes.find((e) => e.from === "team-lead")
          ?.threadId ?? "";
      w = {
        a,
        b,
        aThread,
        revokedToken: a.member("gone").token,
        bobPlan,
        alicePlan,
        bobShutdown,
        aliceLease,
      };
      aRows = await snapshotTeam(env().db, a.name);
      // The snapshot sees what the setup did: a sanity check of the comparison itself.
      expect(aRows.members.get("gone")?.status).toBe("stopped");
      expect(aRows.requests.size).toBe(4);
    });

    // Credentials that identify nobody: refused on every member RPC, before anything runs.
    const refusedCredentials: { kind: string; header: (w: World) => string | undefined }[] = [
      { kind: "missing", header: () => undefined },
      { kind: "missing (empty header)", header: () => "" },
      { kind: "missing (blank header)", header: () => "   " },
      { kind: "malformed (not a token)", header: () => "Bearer not-a-token" },
      { kind: "malformed (scheme only)", header: () => "Bearer" },
      { kind: "malformed (Basic scheme)", header: (x) => `Basic ${x.a.leadToken}` },
      { kind: "malformed (no scheme)", header: (x) => x.a.leadToken },
      { kind: "malformed (one char too many)", header: (x) => `Bearer ${x.a.leadToken}x` },
      { kind: "malformed (one char short)", header: (x) => `Bearer ${x.a.leadToken.slice(0, -1)}` },
      { kind: "malformed (two tokens)", header: (x) => `Bearer ${x.a.leadToken} ${x.a.leadToken}` },
      { kind: "malformed (bad alphabet)", header: () => `Bearer tp_${"!".repeat(43)}` },
      {
        kind: "unknown (well-formed, random)",
        header: () => `Bearer tp_${randomBytes(32).toString("base64url")}`,
      },
      {
        kind: "unknown (A's lead token, one char changed)",
        header: (x) =>
          `Bearer ${x.a.leadToken.slice(0, 10)}${x.a.leadToken[10] === "Q" ? "R" : "Q"}${x.a.leadToken.slice(11)}`,
      },
      { kind: "revoked (removed member of A)", header: (x) => `Bearer ${x.revokedToken}` },
    ];
    const messageFor = (kind: string) =>
      kind.startsWith("missing")
        ? /missing credentials/
        : kind.startsWith("malformed")
          ? /malformed token/
          : kind.startsWith("unknown")
            ? /unknown token/
            : /token revoked: member "gone"/;

    it("refuses missing, malformed, unknown and revoked tokens with Unauthenticated on every member RPC, over every protocol", async () => {
      let calls = 0;
      for (const protocol of PROTOCOLS) {
        const anonymous = env().client(undefined, protocol);
        for (const cred of refusedCredentials) {
          const header = cred.header(w);
          const headers = header === undefined ? undefined : { authorization: header };
          for (const method of memberMethods) {
            const o = await call(anonymous, method, requestAimedAtA(method, w, "x"), headers);
            const where = `${method.name} with ${cred.kind} token over ${protocol}`;
            expect(codeOf(o), where).toBe("Unauthenticated");
            if (!o.ok) expect(o.err.rawMessage, where).toMatch(messageFor(cred.kind));
            calls++;
          }
        }
      }
      expect(calls).toBe(PROTOCOLS.length * refusedCredentials.length * memberMethods.length);
      await expectAUnchanged("refused credentials");
    });

    it("CreateTeam is open on this server: any credential makes a new team of its own, never team A again", async () => {
      for (const protocol of PROTOCOLS) {
        for (const cred of refusedCredentials) {
          const header = cred.header(w);
          const headers = header === undefined ? undefined : { authorization: header };
          const client = env().client(undefined, protocol);
          const made = await call(client, M.createTeam, { team: uniqueName("open") }, headers);
          expect(codeOf(made), `CreateTeam with ${cred.kind} over ${protocol}`).toBe("ok");
          // Taking over A by name is refused, whoever asks.
          const again = await call(client, M.createTeam, { team: w.a.name }, headers);
          expect(codeOf(again), `CreateTeam(A) with ${cred.kind} over ${protocol}`).toBe(
            "AlreadyExists",
          );
        }
      }
      await expectAUnchanged("CreateTeam calls");
    });

    it("another team's lead acts on its own team only: it can neither see nor change team A", async () => {
      const aIds = new Set([w.bobPlan, w.alicePlan, w.bobShutdown]);
      const aOnlyNames = ["alice", "bob", "gone"];
      for (const [i, protocol] of PROTOCOLS.entries()) {
        const b = env().client(w.b.leadToken, protocol);
        const run = (method: DescMethod) =>
          call(b, method, requestAimedAtA(method, w, `${protocol}-${i}`));
        const where = (m: DescMethod) => `${m.name} with B's lead token over ${protocol}`;

        // Names and request ids of A resolve to nothing in B.
        for (const method of [
          M.removeMember,
          M.rotateToken,
          M.send,
          M.getRequest,
          M.awaitRequest,
          M.listAttempts,
          M.getTask,
          M.createTask,
          M.updateTask,
          M.deleteTask,
          M.renewLease,
          M.releaseLease,
          M.getThread,
        ]) {
          expect(codeOf(await run(method)), where(method)).toBe("NotFound");
        }
        // B's history is B's: no thread or hit of A's.
        const threads = await run(M.listThreads);
        expect(codeOf(threads), where(M.listThreads)).toBe("ok");
        for (const t of (threads as { value: { threads: { first: Envelope }[] } }).value.threads) {
          expect(t.first.team, where(M.listThreads)).toBe(w.b.name);
        }
        const found = await run(M.searchMessages);
        expect(codeOf(found), where(M.searchMessages)).toBe("ok");
        const hits = (found as { value: { hits: { envelope: Envelope }[] } }).value.hits;
        expect(
          hits.map((h) => h.envelope.team),
          where(M.searchMessages),
        ).toEqual(hits.map(() => w.b.name));
        for (const h of hits) expect(h.envelope.message?.kind.value).not.toMatch(/^a:/);
        const leases = await run(M.listLeases);
        expect(codeOf(leases), where(M.listLeases)).toBe("ok");
        expect((leases as { value: { leases: unknown[] } }).value.leases).toEqual([]);
        const tasks = await run(M.listTasks);
        expect(codeOf(tasks), where(M.listTasks)).toBe("ok");
        expect((tasks as { value: { tasks: unknown[] } }).value.tasks, where(M.listTasks)).toEqual(
          [],
        );
        expect(codeOf(await run(M.cancelRequest)), where(M.cancelRequest)).toBe("NotFound");
        const party = await call(b, M.listRequests, { party: "alice" });
        expect(codeOf(party), "ListRequests(party alice) with B's token").toBe("NotFound");
        // Seq 3 exists in A's lead inbox but not in B's: acking it is out of range for B.
        expect(codeOf(await run(M.ack)), where(M.ack)).toBe("OutOfRange");

        // What B can read is B's.
        const members = await run(M.listMembers);
        expect(codeOf(members), where(M.listMembers)).toBe("ok");
        const names = (
          (members as { value: { members: { name: string }[] } }).value.members ?? []
        ).map((m) => m.name);
        expect(names).toContain("carol");
        for (const n of aOnlyNames) expect(names, where(M.listMembers)).not.toContain(n);

        const exported = await run(M.exportTeam);
        expect(codeOf(exported), where(M.exportTeam)).toBe("ok");
        const bundle = Buffer.concat(
          (exported as { items: { chunk: Uint8Array }[] }).items.map((i) => i.chunk),
        ).toString("utf8");
        expect(bundle, where(M.exportTeam)).toContain(w.b.name);
        for (const n of [w.a.name, ...aOnlyNames]) {
          expect(bundle, where(M.exportTeam)).not.toContain(`"${n}"`);
        }

        const read = await run(M.readInbox);
        expect(codeOf(read), where(M.readInbox)).toBe("ok");
        const envelopes = (read as { value: { envelopes: Envelope[] } }).value.envelopes;
        expect(envelopes.length).toBeGreaterThan(0);
        for (const e of envelopes) expect(e.team, where(M.readInbox)).toBe(w.b.name);

        const stream = await run(M.subscribe);
        expect(codeOf(stream), where(M.subscribe)).toBe("ok");
        const streamed = (stream as { items: { event: { value: Envelope } }[] }).items;
        expect(streamed.length).toBeGreaterThan(0);
        for (const item of streamed) expect(item.event.value.team).toBe(w.b.name);

        const listed = await run(M.listRequests);
        expect(codeOf(listed), where(M.listRequests)).toBe("ok");
        for (const r of (listed as { value: { requests: RequestRecord[] } }).value.requests) {
          expect(aIds.has(r.requestId), where(M.listRequests)).toBe(false);
          expect(r.team).toBe(w.b.name);
        }

        // AddMember succeeds, and adds to B.
        const added = await run(M.addMember);
        expect(codeOf(added), where(M.addMember)).toBe("ok");
        expect(
          (await w.b.lead.listMembers({})).members.map((m) => m.name),
          where(M.addMember),
        ).toContain(`intruder-${protocol}-${i}`);
      }
      await expectAUnchanged("B's lead's calls");
    });

    it("a teammate is refused the lead-only and party-only calls with PermissionDenied, each by its own rule or check", async () => {
      // `by`: the rule a RuleViolation detail names, or, for the handlers' own checks (no rule
      // id, no detail), the sentence that says which check refused.
      const cases: { what: string; method: DescMethod; request: object; by: string | RegExp }[] = [
        {
          what: "AddMember",
          method: M.addMember,
          request: { name: "eve" },
          by: /^only the team lead may add members$/,
        },
        {
          what: "RemoveMember",
          method: M.removeMember,
          request: { name: "bob" },
          by: /^only the team lead may remove members$/,
        },
        {
          what: "Send shutdown_request",
          method: M.send,
          request: { to: "bob", message: shutdownRequest("go") },
          by: "lead-only-shutdown",
        },
        {
          what: "Send plan_approval_response",
          method: M.send,
          request: { to: "bob", message: planResponse(w.bobPlan, true) },
          by: "lead-only-approval",
        },
        {
          what: "GetRequest of a request between the lead and bob",
          method: M.getRequest,
          request: { requestId: w.bobShutdown },
          by: /only they, the lead and observers may see it$/,
        },
        {
          what: "AwaitRequest of a request between the lead and bob",
          method: M.awaitRequest,
          request: { requestId: w.bobShutdown, timeout: { seconds: 1n } },
          by: /only they, the lead and observers may see it$/,
        },
        {
          what: "CancelRequest of someone else's request",
          method: M.cancelRequest,
          request: { requestId: w.bobPlan },
          by: "requester-only",
        },
        {
          what: "ListAttempts of bob's protocol attempts",
          method: M.listAttempts,
          request: { member: "bob" },
          by: /^only the lead and observers see other members' attempts/,
        },
        { what: "WatchTeam", method: M.watchTeam, request: {}, by: "watch-lead-or-observer" },
        { what: "ExportTeam", method: M.exportTeam, request: {}, by: "export-lead-or-observer" },
        {
          what: "UpdateTask of bob's task",
          method: M.updateTask,
          request: { taskId: "a-task", subject: "mine now" },
          by: "owner-or-lead-updates",
        },
        {
          what: "DeleteTask",
          method: M.deleteTask,
          request: { taskId: "a-task" },
          by: "owner-or-lead-updates",
        },
      ];
      for (const protocol of PROTOCOLS) {
        const alice = env().client(w.a.member("alice").token, protocol);
        for (const c of cases) {
          const o = await call(alice, c.method, c.request);
          const what = `${c.what} by teammate alice over ${protocol}`;
          expect(codeOf(o), what).toBe("PermissionDenied");
          const rule = o.ok ? undefined : o.err.findDetails(RuleViolationSchema)[0]?.rule;
          if (typeof c.by === "string") expect(rule, what).toBe(c.by);
          else {
            expect(rule, `${what}: a handler's check, no rule detail`).toBeUndefined();
            expect(o.ok ? "" : o.err.rawMessage, what).toMatch(c.by);
          }
        }
        // What a teammate may list is its own: alice sees her plan, not bob's requests.
        const listed = await call(alice, M.listRequests, {});
        expect(codeOf(listed)).toBe("ok");
        expect(
          (listed as { value: { requests: RequestRecord[] } }).value.requests.map(
            (r) => r.requestId,
          ),
        ).toEqual([w.alicePlan]);
      }
      await expectAUnchanged("teammate alice's refused calls");
    });

    it("the lead's own token still works afterwards (the matrix did not lock anyone out)", async () => {
      const members = await w.a.lead.listMembers({});
      expect(members.members.map((m) => m.name)).toEqual(["team-lead", "alice", "bob", "gone"]);
      await expectAUnchanged("the whole matrix");
    });
  },
  // Hundreds of bad tokens from one address in seconds: what the failed-authentication
  // throttle stops (test/service/auth-throttle.test.ts). Off here: each refusal is checked.
  { heartbeatIntervalMs: 150, authFailures: { perSecond: 0, burst: 1, unknownTtlMs: 0 } },
);

describe("token matrix with TEAM_ADMIN_TOKEN set", () => {
  describeEachDatabase(
    "CreateTeam",
    (env: () => TestEnv) => {
      it("refuses CreateTeam with Unauthenticated for every credential but the admin token, over every protocol", async () => {
        const member = await env().team("alice");
        const countTeams = async () =>
          Number(
            (await env().db.query<{ n: bigint }>("SELECT count(*) AS n FROM teams"))[0]?.n ?? -1,
          );
        const before = await countTeams();
        const rows = await snapshotTeam(env().db, member.name);
        const credentials: [string, string | undefined][] = [
          ["missing", undefined],
          ["empty", ""],
          ["malformed", "Bearer not-a-token"],
          ["unknown", `Bearer tp_${randomBytes(32).toString("base64url")}`],
          ["a team lead's token", `Bearer ${member.leadToken}`],
          ["a teammate's token", `Bearer ${member.member("alice").token}`],
          ["the admin token under another scheme", "Basic the-admin-secret"],
          ["the admin token with a suffix", "Bearer the-admin-secretx"],
        ];
        for (const protocol of PROTOCOLS) {
          const client = env().client(undefined, protocol);
          for (const [kind, header] of credentials) {
            const headers = header === undefined ? undefined : { authorization: header };
            const o = await call(client, M.createTeam, { team: uniqueName("nope") }, headers);
            expect(codeOf(o), `CreateTeam with ${kind} over ${protocol}`).toBe("Unauthenticated");
            const i = await call(client, M.importTeam, { chunk: new Uint8Array() }, headers);
            expect(codeOf(i), `ImportTeam with ${kind} over ${protocol}`).toBe("Unauthenticated");
          }
        }
        expect(await countTeams()).toBe(before);
        expect(
          describeDiff(diffSnapshots(rows, await snapshotTeam(env().db, member.name))),
        ).toEqual([]);
        const ok = await call(env().client("the-admin-secret"), M.createTeam, {
          team: uniqueName("yes"),
        });
        expect(codeOf(ok)).toBe("ok");
        // With the admin token ImportTeam reaches the bundle (an empty one: refused by it).
        const imported = await call(env().client("the-admin-secret"), M.importTeam, {
          chunk: new Uint8Array(),
        });
        expect(codeOf(imported)).toBe("FailedPrecondition");
      });
    },
    { adminToken: "the-admin-secret" },
  );
});
