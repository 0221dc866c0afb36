import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import { migrate } from "../../server/store/migrate.js";
import { createPgDatabase } from "../../server/store/pg-database.js";
import { createScratchPgDatabase } from "../support/databases.js";
import { startTestEnv, type TeamClient, type TestEnv, uniqueName } from "../support/harness.js";
import {
  inbox,
  planRequest,
  planResponse,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";
import { awaitingBeyond, subscribedBeyond } from "../support/subscribed.js";
import { waitFor } from "../support/wait.js";

type Replica = TestEnv & { close(): Promise<void> };

/** Collects a stream's envelopes in the background until stopped. */
function follow(client: TeamClient) {
  const abort = new AbortController();
  const envelopes: Envelope[] = [];
  const ended = (async () => {
    try {
      for await (const e of client.subscribe({ afterSeq: 0n }, { signal: abort.signal })) {
        if (e.event.case === "envelope") envelopes.push(e.event.value);
      }
      return undefined;
    } catch (err) {
      return ConnectError.from(err);
    }
  })();
  return { envelopes, ended, stop: () => abort.abort() };
}

/**
 * Three server processes' worth of state (each its own pool, hub, listener, sweeper and
 * HTTP/2 server) on one PostgreSQL database. Heartbeats are an hour apart, so a message
 * reaching a subscriber on another replica can only have come through LISTEN/NOTIFY.
 */
describe.skipIf(inject("pgAdminUrl") === "")("3 replicas on one PostgreSQL", () => {
  const replicas: Replica[] = [];
  let drop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const scratch = await createScratchPgDatabase();
    drop = scratch.drop;
    for (let i = 0; i < 3; i++) {
      const db = createPgDatabase({ connectionString: scratch.url, poolSize: 10 });
      await migrate(db); // every replica migrates at start, as main.ts does
      replicas.push(
        await startTestEnv(
          "postgres",
          { db, url: scratch.url, dispose: () => db.close() },
          // The caller cache trusts a token for 10 minutes: a revoked token refused within
          // the test can only have been forgotten through the revocation's notification.
          { heartbeatIntervalMs: 3_600_000, sweepIntervalMs: 100, callerCacheTtlMs: 600_000 },
        ),
      );
    }
  });

  afterAll(async () => {
    for (const r of replicas) {
      await r.close();
      await r.db.close();
    }
    await drop?.();
  });

  /** follow() on replica `i`, resolved once the stream is registered there. */
  async function followOn(i: number, client: TeamClient) {
    const replica = replicas[i] as Replica;
    const before = replica.app.hub.waiting;
    const s = follow(client);
    await subscribedBeyond(replica.app, before);
    return s;
  }

  /** A team whose members are spread over the replicas: member i talks to replica i % 3. */
  async function spreadTeam(names: string[]) {
    const created = await replicas[0]?.client().createTeam({ team: uniqueName("spread") });
    if (!created) throw new Error("no replica");
    const lead = replicas[0]?.client(created.token) as TeamClient;
    const members = new Map<string, TeamClient>();
    const tokens = new Map<string, string>();
    for (const [i, name] of names.entries()) {
      const token = (await lead.addMember({ name })).token;
      tokens.set(name, token);
      members.set(name, replicas[i % 3]?.client(token) as TeamClient);
    }
    const member = (name: string) => members.get(name) as TeamClient;
    /** The member's client on a given replica. */
    const memberOn = (replica: number, name: string) =>
      replicas[replica]?.client(tokens.get(name)) as TeamClient;
    return { lead, member, memberOn, leadToken: created.token };
  }

  it("a message sent through one replica reaches subscribers on the others", async () => {
    const names = ["m0", "m1", "m2", "m3", "m4", "m5"];
    const t = await spreadTeam(names);
    const before = replicas.map((r) => r.app.hub.waiting);
    const streams = new Map(names.map((n) => [n, follow(t.member(n))]));
    // Two members per replica: every stream registered before the first send, so each
    // envelope crosses to its replica live, through LISTEN/NOTIFY.
    await Promise.all(replicas.map((r, i) => subscribedBeyond(r.app, (before[i] ?? 0) + 1)));
    for (const from of names) {
      for (const to of names) {
        if (from !== to) await t.member(from).send({ to, message: text(`${from}->${to}`) });
      }
    }
    await waitFor("every message on every replica", () =>
      [...streams.values()].every((s) => s.envelopes.length === names.length - 1),
    );
    for (const [name, s] of streams) {
      s.stop();
      expect(s.envelopes.map((e) => e.seq)).toEqual([1n, 2n, 3n, 4n, 5n]);
      expect(new Set(s.envelopes.map((e) => e.from))).toEqual(
        new Set(names.filter((n) => n !== name)),
      );
    }
  });

  it("RemoveMember on one replica ends the member's stream on another", async () => {
    const t = await spreadTeam(["a0", "a1"]); // a1 subscribes through replica 1
    const s = await followOn(1, t.member("a1"));
    const leadOn2 = replicas[2]?.client(t.leadToken) as TeamClient;
    await leadOn2.removeMember({ name: "a1" });
    const err = await s.ended;
    expect(err?.code).toBe(Code.Unauthenticated);
    expect(err?.rawMessage).toMatch(/removed by the lead/);
  });

  it("a token revoked on one replica is refused on the others (their caller caches forget it)", async () => {
    const t = await spreadTeam(["r0", "r1"]);
    // r1 has called every replica, so each one has its token cached.
    for (let i = 0; i < 3; i++) await t.memberOn(i, "r1").listMembers({});
    const leadOn2 = replicas[2]?.client(t.leadToken) as TeamClient;
    await leadOn2.removeMember({ name: "r1" });
    for (let i = 0; i < 3; i++) {
      await waitFor(`replica ${i} to refuse the revoked token`, async () => {
        const err = await t
          .memberOn(i, "r1")
          .listMembers({})
          .then(
            () => undefined,
            (e) => ConnectError.from(e),
          );
        return err?.code === Code.Unauthenticated;
      });
    }
  });

  it("a send from a token revoked a moment ago stores nothing, even where the revocation is not heard yet", async () => {
    const t = await spreadTeam(["s0", "s1"]);
    const sender = t.memberOn(1, "s1");
    await sender.listMembers({}); // cached on replica 1
    // Stopped by hand in SQL: no process hears of it, so replica 1's cache still trusts the
    // token (for up to its TTL). The sends must still be refused, by their own transaction.
    await replicas[0]?.db.query("UPDATE members SET status = 'stopped' WHERE name = 's1'");
    expect((await sender.listMembers({})).members.length).toBeGreaterThan(0); // cached: stale
    for (const messageId of ["", "with-id"]) {
      const err = await sender
        .send({ to: "team-lead", message: text(`from a revoked token ${messageId}`), messageId })
        .then(
          () => undefined,
          (e) => ConnectError.from(e),
        );
      expect(err?.code, `send with message_id "${messageId}"`).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toMatch(/token revoked/);
    }
    const broadcast = await sender.send({ to: "*", message: text("all") }).then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(broadcast?.code).toBe(Code.Unauthenticated);
    const stored = await replicas[0]?.db.query(
      "SELECT 1 FROM messages m JOIN members s ON s.id = m.sender_id WHERE s.name = 's1'",
    );
    expect(stored).toEqual([]);
  });

  it("an approved shutdown ends the teammate's stream on another replica cleanly", async () => {
    const t = await spreadTeam(["b0", "b1"]);
    const s = await followOn(1, t.member("b1"));
    const asked = await t.lead.send({ to: "b1", message: shutdownRequest() });
    // b1 answers through replica 2: the same token, another process.
    await t.memberOn(2, "b1").send({
      to: "team-lead",
      message: shutdownResponse(asked.requestId, true),
    });
    expect(await s.ended).toBeUndefined();
  });

  it("AwaitRequest on one replica returns when the request is answered through another", async () => {
    const t = await spreadTeam(["c0", "c1"]); // c1 on replica 1
    const asked = await t.member("c1").send({ to: "team-lead", message: planRequest("p") });
    const before = replicas[1]?.app.waiters.size ?? 0;
    const waiting = t
      .member("c1")
      .awaitRequest({ requestId: asked.requestId, timeout: { seconds: 30n } });
    await awaitingBeyond(replicas[1]?.app as Replica["app"], before);
    const leadOn2 = replicas[2]?.client(t.leadToken) as TeamClient;
    await leadOn2.send({ to: "c1", message: planResponse(asked.requestId, true) });
    expect((await waiting).request?.status).toBe(RequestStatus.APPROVED);
  });

  it("two replicas answer the same request at once, round after round: one winner per request, every other attempt refused once-only naming the winner (PostgreSQL only: the embedded database belongs to one process, so two replicas cannot share it, and it runs one transaction at a time)", async () => {
    const t = await spreadTeam(["p0", "p1"]);
    // The lead approves through replica 0 and rejects through replica 1 while the requester
    // cancels through one or the other: three transactions on two processes, each trying to
    // move the same pending row.
    const approver = replicas[0]?.client(t.leadToken) as TeamClient;
    const rejecter = replicas[1]?.client(t.leadToken) as TeamClient;
    const requesterOn = [t.memberOn(0, "p1"), t.memberOn(1, "p1")] as const;
    // Warm every connection and caller cache, so that no attempt starts late on a handshake.
    await Promise.all([approver, rejecter, ...requesterOn].map((c) => c.listMembers({})));
    const ROUNDS = 30;
    const attempts = ["approved", "rejected", "canceled"] as const;
    type Outcome = (typeof attempts)[number];
    const statusOf = {
      approved: RequestStatus.APPROVED,
      rejected: RequestStatus.REJECTED,
      canceled: RequestStatus.CANCELED,
    };
    const wins = { approved: 0, rejected: 0, canceled: 0 };
    /** true for a once-only refusal naming the winner's status; the error in words otherwise. */
    const refusedOnce = (e: unknown, winner: Outcome) => {
      const err = ConnectError.from(e);
      return err.code === Code.FailedPrecondition &&
        err.rawMessage.startsWith("once-only: ") &&
        err.rawMessage.includes(`is already ${winner};`)
        ? true
        : `${Code[err.code]} ${err.rawMessage}`;
    };
    for (let round = 0; round < ROUNDS; round++) {
      const { requestId } = await requesterOn[round % 2].send({
        to: "team-lead",
        message: planRequest(`plan ${round}`),
      });
      // Started in one tick, no await between them.
      const outcomes = await Promise.allSettled([
        approver.send({ to: "p1", message: planResponse(requestId, true) }),
        rejecter.send({ to: "p1", message: planResponse(requestId, false, `no ${round}`) }),
        requesterOn[(round + 1) % 2].cancelRequest({ requestId }),
      ]);
      const won = attempts.filter((_, i) => outcomes[i]?.status === "fulfilled");
      expect(won, `round ${round}: the attempts that succeeded`).toHaveLength(1);
      const winner = won[0] as Outcome;
      wins[winner]++;
      for (const [i, o] of outcomes.entries()) {
        if (o.status === "rejected") {
          expect(refusedOnce(o.reason, winner), `round ${round}: ${attempts[i]} refused`).toBe(
            true,
          );
        }
      }
      const record = (await approver.getRequest({ requestId })).request;
      expect(record?.status, `round ${round}`).toBe(statusOf[winner]);
    }
    // What the rounds left in the inboxes: the requester holds exactly one answer for each
    // request an answer won, the lead exactly one request_update for each one canceled.
    const answers = (await inbox(requesterOn[0])).filter(
      (e) => e.message?.kind.case === "planApprovalResponse",
    );
    const updates = (await inbox(t.lead)).filter((e) => e.message?.kind.case === "requestUpdate");
    const requestsNamedTwice = (envelopes: Envelope[]) => {
      const n = new Map<string, number>();
      for (const e of envelopes) n.set(e.requestId, (n.get(e.requestId) ?? 0) + 1);
      return [...n].filter(([, c]) => c > 1).map(([id]) => id);
    };
    const approvals = answers.filter(
      (e) => e.message?.kind.case === "planApprovalResponse" && e.message.kind.value.approve,
    );
    expect({
      answers: answers.length,
      approvals: approvals.length,
      updates: updates.length,
      namedTwice: requestsNamedTwice([...answers, ...updates]),
    }).toEqual({
      answers: wins.approved + wins.rejected,
      approvals: wins.approved,
      updates: wins.canceled,
      namedTwice: [],
    });
    process.stdout.write(`replica race: ${ROUNDS} rounds, winners ${JSON.stringify(wins)}\n`);
  });

  it("three sweepers expire each overdue request once: one request_update per request", async () => {
    const t = await spreadTeam(["d0", "d1", "d2"]);
    const ids: string[] = [];
    for (const name of ["d0", "d1", "d2"]) {
      for (let i = 0; i < 5; i++) {
        ids.push(
          (await t.lead.send({ to: name, message: shutdownRequest(), ttl: { seconds: 1n } }))
            .requestId,
        );
      }
    }
    await waitFor("every request expired and reported", async () => {
      const updates = (await inbox(t.lead)).filter((e) => e.message?.kind.case === "requestUpdate");
      return updates.length >= ids.length;
    });
    // No wait for a late duplicate: a notice is written in the transaction that moves its
    // request out of pending, and every request is out of pending now, so none can follow.
    const statuses = await replicas[0]?.db.query<{ status: string }>(
      `SELECT status FROM requests WHERE id = ANY($1::text[])`,
      [ids],
    );
    expect(statuses?.map((r) => r.status)).toEqual(ids.map(() => "expired"));
    const updates = (await inbox(t.lead)).filter((e) => e.message?.kind.case === "requestUpdate");
    expect(updates.map((e) => e.requestId).sort()).toEqual([...ids].sort());
  });

  it("a listener that loses its connection reconnects and catches up", async () => {
    const t = await spreadTeam(["e0", "e1"]); // e1 on replica 1
    const s = await followOn(1, t.member("e1"));
    // Kill every LISTEN connection of the three replicas (as a PostgreSQL restart would).
    await replicas[0]?.db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name = 'team-protocols-listen' AND datname = current_database()`,
    );
    await t.member("e0").send({ to: "e1", message: text("sent while the listener was down") });
    await waitFor("the message after the listener came back", () => s.envelopes.length === 1);
    s.stop();
    expect(s.envelopes[0]?.message?.kind.value).toBe("sent while the listener was down");
  });
});
