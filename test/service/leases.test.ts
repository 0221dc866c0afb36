import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { AttemptOutcome, LeaseMode, MemberRole } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, raceTitle } from "../support/harness.js";
import { inbox, refused, shutdownRequest, shutdownResponse } from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";
import { openSubscription } from "../support/subscription-reader.js";
import { eventually, sleep } from "../support/wait.js";

const EXCLUSIVE = LeaseMode.EXCLUSIVE;
const SHARED = LeaseMode.SHARED;

/**
 * Leases over a live server, on both databases: who holds what, the refusal that names the
 * holder, racing acquires, renew, release and the lead's break, expiry, and release when a
 * member stops. A short default ttl (0.4 s) lets expiry happen within a test.
 */
describeEachDatabase(
  "leases",
  (env, kind) => {
    it("an overlapping exclusive acquire is refused lease-held, naming the holder, its resource, reason and expiry; a disjoint one is held", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      const { lease } = await alice.acquireLease({
        resource: "src/parser/**",
        mode: EXCLUSIVE,
        ttlSeconds: 60,
        reason: "rewriting the lexer",
      });
      expect(lease).toMatchObject({ holder: "alice", resource: "src/parser/**", mode: EXCLUSIVE });
      const r = await refused(() =>
        bob.acquireLease({ resource: "src/parser/lexer.ts", mode: SHARED, ttlSeconds: 60 }),
      );
      expect([r.code, r.detail?.rule]).toEqual([Code.FailedPrecondition, "lease-held"]);
      expect(r.message).toContain('alice holds an exclusive lease on "src/parser/**"');
      expect(r.message).toContain("rewriting the lexer");
      expect(r.message).toContain(lease?.expiresAt ? "until 20" : "?");
      // Disjoint: held at once.
      const other = await bob.acquireLease({
        resource: "docs/**",
        mode: EXCLUSIVE,
        ttlSeconds: 60,
      });
      expect(other.lease?.holder).toBe("bob");
      // A member's own leases never conflict with each other.
      await alice.acquireLease({
        resource: "src/parser/lexer.ts",
        mode: EXCLUSIVE,
        ttlSeconds: 60,
      });
      const listed = await t.lead.listLeases({});
      expect(listed.leases.map((l) => [l.holder, l.resource])).toEqual([
        ["alice", "src/parser/**"],
        ["bob", "docs/**"],
        ["alice", "src/parser/lexer.ts"],
      ]);
      expect(
        (await t.lead.listLeases({ resource: "src/parser/x.ts" })).leases.map((l) => l.resource),
      ).toEqual(["src/parser/**"]);
      expect((await t.lead.listLeases({ holder: "bob" })).leases.map((l) => l.resource)).toEqual([
        "docs/**",
      ]);
    });

    it("shared leases share; an exclusive one is refused while any overlapping shared one is held", async () => {
      const t = await env().team("alice", "bob", "carol");
      await t.member("alice").client.acquireLease({ resource: "db:migrations", mode: SHARED });
      await t.member("bob").client.acquireLease({ resource: "db:migrations", mode: SHARED });
      const r = await refused(() =>
        t.member("carol").client.acquireLease({ resource: "db:migrations", mode: EXCLUSIVE }),
      );
      expect(r.detail?.rule).toBe("lease-held");
      expect(r.message).toMatch(/(alice|bob) holds a shared lease on "db:migrations"/);
    });

    it(
      raceTitle(kind, "20 members acquire overlapping globs at once: exactly one holds"),
      async () => {
        const names = Array.from({ length: 20 }, (_, i) => `m${i}`);
        const t = await env().team(...names);
        const globs = ["src/**", "src/a/**", "src/a/b.ts", "**/b.ts", "src/*/b.ts"];
        const results = await Promise.allSettled(
          names.map((n, i) =>
            t.member(n).client.acquireLease({
              resource: globs[i % globs.length] ?? "src/**",
              mode: EXCLUSIVE,
              ttlSeconds: 60,
            }),
          ),
        );
        const held = results.filter((r) => r.status === "fulfilled");
        expect(held).toHaveLength(1);
        for (const r of results) {
          if (r.status === "rejected") expect(String(r.reason)).toMatch(/lease-held/);
        }
        expect((await t.lead.listLeases({})).leases).toHaveLength(1);
      },
    );

    it("renew extends the holder's lease; only the holder renews; only the holder releases, the lead breaks with a reason the holder is told", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      const { lease } = await alice.acquireLease({ resource: "README.md", ttlSeconds: 5 });
      const id = lease?.leaseId ?? "";
      const renewed = await alice.renewLease({ leaseId: id, ttlSeconds: 60 });
      expect(Number(renewed.lease?.expiresAt?.seconds)).toBeGreaterThan(
        Number(lease?.expiresAt?.seconds) + 30,
      );
      const notHolder = await refused(() => bob.renewLease({ leaseId: id }));
      expect([notHolder.code, notHolder.detail?.rule]).toEqual([
        Code.PermissionDenied,
        "lease-holder-only",
      ]);
      const bobRelease = await refused(() => bob.releaseLease({ leaseId: id }));
      expect(bobRelease.detail?.rule).toBe("lease-holder-only");
      const noReason = await refused(() => t.lead.releaseLease({ leaseId: id }));
      expect([noReason.code, noReason.detail?.rule]).toEqual([
        Code.InvalidArgument,
        "reason-on-reject",
      ]);
      expect((await t.lead.listLeases({})).leases).toHaveLength(1);
      await t.lead.releaseLease({ leaseId: id, reason: "the release needs README.md now" });
      expect((await t.lead.listLeases({})).leases).toHaveLength(0);
      // The break is journaled as the lead's step naming the holder and the lease; bob's and
      // the reasonless tries as refused ones; the holder's own release below is no step.
      const steps = (await t.lead.listAttempts({})).attempts
        .filter((a) => a.action === "break_lease")
        .map((a) => [a.member, a.to, a.requestId, a.outcome, a.rule])
        .reverse();
      expect(steps).toEqual([
        ["bob", "", id, AttemptOutcome.REFUSED, "lease-holder-only"],
        ["team-lead", "", id, AttemptOutcome.REFUSED, "reason-on-reject"],
        ["team-lead", "alice", id, AttemptOutcome.ACCEPTED, ""],
      ]);
      const told = (await inbox(alice)).filter((e) => e.from === "");
      expect(told).toHaveLength(1);
      expect(told[0]?.message?.kind.value).toContain("the release needs README.md now");
      // Gone: renewing or releasing it again is NotFound; bob may take it now.
      expect((await refused(() => alice.renewLease({ leaseId: id }))).code).toBe(Code.NotFound);
      await bob.acquireLease({ resource: "README.md" });
      // The holder's own release: no message to anyone.
      const own = await alice.acquireLease({ resource: "docs/**" });
      await alice.releaseLease({ leaseId: own.lease?.leaseId ?? "" });
      expect((await inbox(alice)).filter((e) => e.from === "")).toHaveLength(1);
      expect((await t.lead.listAttempts({})).attempts).toHaveLength(3);
    });

    it("a lease expires at its ttl (the configured default when none is given): it holds nothing after", async () => {
      const t = await env().team("alice", "bob");
      const { lease } = await t.member("alice").client.acquireLease({ resource: "src/**" });
      const ms = (ts?: { seconds: bigint; nanos: number }) =>
        Number(ts?.seconds) * 1000 + (ts?.nanos ?? 0) / 1e6;
      expect(ms(lease?.expiresAt) - ms(lease?.acquiredAt)).toBeCloseTo(400, -1);
      await sleep(600);
      expect((await t.lead.listLeases({})).leases).toHaveLength(0);
      // The sweeper deletes it and tells the holder, once.
      await eventually(async () => {
        const told = (await inbox(t.member("alice").client)).filter((e) => e.from === "");
        expect(told.map((e) => e.message?.kind.value)).toEqual([
          expect.stringMatching(/^Your exclusive lease lease_\S+ on "src\/\*\*" expired at /),
        ]);
      });
      const [{ n } = { n: -1n }] = await env().db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM leases WHERE lease_id = $1",
        [lease?.leaseId],
      );
      expect(n).toBe(0n);
      const { lease: bobs } = await t.member("bob").client.acquireLease({ resource: "src/a.ts" });
      expect(bobs?.holder).toBe("bob");
      const tooLong = await refused(() =>
        t.member("alice").client.acquireLease({ resource: "x", ttlSeconds: 3600 }),
      );
      expect([tooLong.code, tooLong.detail?.rule, tooLong.detail?.field]).toEqual([
        Code.InvalidArgument,
        "lease-ttl",
        "ttl_seconds",
      ]);
    });

    it("a member stopped by an approved shutdown, or removed, loses its leases in that transaction", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      await alice.acquireLease({ resource: "src/**", ttlSeconds: 60 });
      await t.member("bob").client.acquireLease({ resource: "docs/**", ttlSeconds: 60 });
      const asked = await t.lead.send({ to: "alice", message: shutdownRequest("done") });
      await alice.send({ to: "team-lead", message: shutdownResponse(asked.requestId, true) });
      expect((await t.lead.listLeases({})).leases.map((l) => l.holder)).toEqual(["bob"]);
      await t.lead.removeMember({ name: "bob" });
      expect((await t.lead.listLeases({})).leases).toEqual([]);
    });

    it("a resource that could not name one place is refused lease-resource, naming the field", async () => {
      const t = await env().team("alice");
      for (const resource of ["", "/etc/passwd", "src/../x", "C:/src"]) {
        const r = await refused(() => t.member("alice").client.acquireLease({ resource }));
        expect([r.code, r.detail?.rule, r.detail?.field], resource).toEqual([
          Code.InvalidArgument,
          "lease-resource",
          "resource",
        ]);
      }
    });

    it("a U+0000 or an oversized value in any lease field is refused size-shape naming it, never Internal; nothing is stored", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const held = await alice.acquireLease({ resource: "src/a.ts", reason: "mine" });
      const leaseId = held.lease?.leaseId ?? "";
      const cases: [string, () => Promise<unknown>][] = [
        ["reason", () => alice.acquireLease({ resource: "src/b.ts", reason: "a\u0000b" })],
        ["reason", () => alice.acquireLease({ resource: "src/b.ts", reason: "x".repeat(16_385) })],
        ["lease_id", () => alice.renewLease({ leaseId: "lease_\u0000" })],
        ["lease_id", () => alice.releaseLease({ leaseId: "l".repeat(200) })],
        ["reason", () => t.lead.releaseLease({ leaseId, reason: "because\u0000" })],
        ["holder", () => t.lead.listLeases({ holder: "a\u0000" })],
        ["resource", () => t.lead.listLeases({ resource: "src/\u0000" })],
      ];
      for (const [field, call] of cases) {
        const r = await refused(call);
        expect([r.code, r.detail?.rule, r.detail?.field], field).toEqual([
          Code.InvalidArgument,
          "size-shape",
          field,
        ]);
      }
      const { leases } = await t.lead.listLeases({});
      expect(leases.map((l) => [l.leaseId, l.reason])).toEqual([[leaseId, "mine"]]);
    });

    it("an observer lists leases and may not take one", async () => {
      const t = await env().team("alice");
      const added = await t.lead.addMember({ name: "watcher", role: MemberRole.OBSERVER });
      const watcher = env().client(added.token);
      await t.member("alice").client.acquireLease({ resource: "src/**", ttlSeconds: 60 });
      expect((await watcher.listLeases({})).leases).toHaveLength(1);
      const r = await refused(() => watcher.acquireLease({ resource: "docs/**" }));
      expect([r.code, r.detail?.rule]).toEqual([Code.PermissionDenied, "observer-read-only"]);
    });
  },
  { leaseTtls: { defaultMs: 400, maxMs: 120_000 } },
);

/**
 * MAX_LEASES_PER_MEMBER (3 here): every acquire compares its pattern with each live lease of
 * the team, so how many one member may hold is capped; counted under the team's lease lock.
 */
describeEachDatabase(
  "leases per member",
  (env, kind) => {
    it("a 4th live lease is refused leases-per-member naming the member, its count and the setting; a release makes room; a renew is never refused; other members are not affected", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const held: string[] = [];
      for (const resource of ["task:a", "task:b", "src/**"]) {
        held.push((await alice.acquireLease({ resource, ttlSeconds: 60 })).lease?.leaseId ?? "");
      }
      const r = await refused(() => alice.acquireLease({ resource: "docs/**", ttlSeconds: 60 }));
      expect([r.code, r.detail?.rule]).toEqual([Code.ResourceExhausted, "leases-per-member"]);
      expect(r.message).toBe(
        'leases-per-member: member "alice" already holds 3 live leases (MAX_LEASES_PER_MEMBER 3); release one (ReleaseLease) or renew one you hold instead of acquiring another',
      );
      // At the cap a renew of a held lease still passes.
      await alice.renewLease({ leaseId: held[0] ?? "", ttlSeconds: 120 });
      // Another member's count is its own.
      for (const resource of ["task:c", "task:d", "docs/**"]) {
        await t.member("bob").client.acquireLease({ resource, ttlSeconds: 60 });
      }
      await alice.releaseLease({ leaseId: held[1] ?? "" });
      const again = await alice.acquireLease({ resource: "task:e", ttlSeconds: 60 });
      expect(again.lease?.holder).toBe("alice");
      expect((await t.lead.listLeases({ holder: "alice" })).leases).toHaveLength(3);
    });

    it(
      raceTitle(kind, "10 acquires of distinct resources by one member at once: exactly 3 hold"),
      async () => {
        const t = await env().team("alice");
        const alice = t.member("alice").client;
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) =>
            alice.acquireLease({ resource: `task:t${i}`, ttlSeconds: 60 }),
          ),
        );
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(3);
        for (const r of results) {
          if (r.status === "rejected") expect(String(r.reason)).toMatch(/leases-per-member/);
        }
        expect((await t.lead.listLeases({ holder: "alice" })).leases).toHaveLength(3);
      },
    );
  },
  { maxLeasesPerMember: 3 },
);

/**
 * What each lease refusal says, word for word (an agent reads the sentence to decide what to
 * do next), and what a break tells the holder: live on its open stream (no heartbeat here
 * before the reader gives up), stored as a text.
 */
describeEachDatabase(
  "leases: the refusals' sentences and the holder told",
  (env) => {
    const iso = (ts?: { seconds: bigint; nanos: number }) =>
      new Date(Number(ts?.seconds) * 1000 + Math.floor((ts?.nanos ?? 0) / 1e6)).toISOString();

    it("lease-held names the holder, its mode, resource, expiry and reason, the wanted resource, and whether the holder's lease is what excludes", async () => {
      const t = await env().team("alice", "bob", "carol");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      const carol = t.member("carol").client;
      const plain = (await alice.acquireLease({ resource: "src/**", mode: EXCLUSIVE })).lease;
      const why = (
        await alice.acquireLease({ resource: "docs/**", mode: EXCLUSIVE, reason: "rewording" })
      ).lease;
      const shared = (await carol.acquireLease({ resource: "db:main", mode: SHARED })).lease;
      const exclusiveWanted = await refused(() =>
        bob.acquireLease({ resource: "src/a.ts", mode: EXCLUSIVE }),
      );
      expect([exclusiveWanted.code, exclusiveWanted.message]).toEqual([
        Code.FailedPrecondition,
        `lease-held: alice holds an exclusive lease on "src/**" (until ${iso(plain?.expiresAt)}), which overlaps "src/a.ts"; ask alice to release it (send_message), or wait until it expires`,
      ]);
      const sharedWanted = await refused(() =>
        bob.acquireLease({ resource: "docs/x.md", mode: SHARED }),
      );
      expect(sharedWanted.message).toBe(
        `lease-held: alice holds an exclusive lease on "docs/**" (until ${iso(why?.expiresAt)}: rewording), which overlaps "docs/x.md" and is exclusive; ask alice to release it (send_message), or wait until it expires`,
      );
      const overShared = await refused(() =>
        bob.acquireLease({ resource: "db:main", mode: EXCLUSIVE }),
      );
      expect(overShared.message).toBe(
        `lease-held: carol holds a shared lease on "db:main" (until ${iso(shared?.expiresAt)}), which overlaps "db:main"; ask carol to release it (send_message), or wait until it expires`,
      );
    });

    it("lease-ttl: the maximum itself is granted, a second more is refused naming the maximum; lease-resource quotes at most 80 characters of the resource", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const { lease } = await alice.acquireLease({ resource: "src/**", ttlSeconds: 120 });
      expect(
        Number(lease?.expiresAt?.seconds) - Number(lease?.acquiredAt?.seconds),
      ).toBeGreaterThanOrEqual(119);
      const over = await refused(() =>
        alice.renewLease({ leaseId: lease?.leaseId ?? "", ttlSeconds: 121 }),
      );
      expect([over.code, over.message, over.detail?.field]).toEqual([
        Code.InvalidArgument,
        "lease-ttl: ttl_seconds 121 is more than this server's maximum of 120 s (LEASE_TTL_MAX_S): renew it instead",
        "ttl_seconds",
      ]);
      const long = `/${"a".repeat(99)}`;
      const bad = await refused(() => alice.acquireLease({ resource: long }));
      expect(bad.message).toBe(
        `lease-resource: the resource "/${"a".repeat(79)}" is absolute: give a path relative to the repository; give a path glob relative to the repository (src/parser/**) or kind:name (task:parser)`,
      );
    });

    it("renew, release and a break: the unknown lease, the holder-only and the reason-on-reject sentences; a blank reason is no reason", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      const id = (await alice.acquireLease({ resource: "README.md" })).lease?.leaseId ?? "";
      const unknown = await refused(() => alice.renewLease({ leaseId: "lease_nope" }));
      expect([unknown.code, unknown.message]).toEqual([
        Code.NotFound,
        'no live lease "lease_nope" in this team (released, expired, or never taken): ListLeases shows the live ones',
      ]);
      const renew = await refused(() => bob.renewLease({ leaseId: id }));
      expect(renew.message).toBe(
        `lease-holder-only: lease ${id} is alice's: only its holder renews it`,
      );
      const release = await refused(() => bob.releaseLease({ leaseId: id, reason: "mine now" }));
      expect([release.code, release.message]).toEqual([
        Code.PermissionDenied,
        `lease-holder-only: lease ${id} is alice's: only its holder releases it (the lead may break it)`,
      ]);
      const blank = await refused(() => t.lead.releaseLease({ leaseId: id, reason: "   " }));
      expect([blank.code, blank.message, blank.detail?.field]).toEqual([
        Code.InvalidArgument,
        "reason-on-reject: breaking alice's lease needs a reason: it is told to alice",
        "reason",
      ]);
      expect((await t.lead.listLeases({})).leases.map((l) => l.leaseId)).toEqual([id]);
    });

    it("a break reaches the holder's open stream live, as a text from the server that a search by kind text finds", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const id = (await alice.acquireLease({ resource: "src/**" })).lease?.leaseId ?? "";
      const before = env().app.hub.waiting;
      const stream = openSubscription(alice);
      await subscribedBeyond(env().app, before);
      await t.lead.releaseLease({ leaseId: id, reason: "the release needs src" });
      const read = await stream.until((e) => e.event.case === "envelope");
      stream.close();
      expect(read.map((e) => e.event.case)).not.toContain("heartbeat");
      const notice = `The lead broke your exclusive lease ${id} on "src/**": the release needs src. Acquire it again before you edit it.`;
      expect(read.at(-1)?.event.value).toMatchObject({
        from: "",
        to: "alice",
        message: { kind: { case: "text", value: notice } },
      });
      const found = await alice.searchMessages({ query: "broke", kind: "text" });
      expect(found.hits.map((h) => h.envelope?.message?.kind.value)).toEqual([notice]);
    });

    it("a lease left to a stopped member (an acquire racing its removal) is broken and swept without storing a notice for it", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const broken = (await alice.acquireLease({ resource: "src/**" })).lease?.leaseId ?? "";
      const lapsing = (await alice.acquireLease({ resource: "docs/**", ttlSeconds: 1 })).lease;
      // The race's outcome, written directly: alice stopped, her leases still stored.
      await env().db.query(
        "UPDATE members SET status = 'stopped', stopped_at = now() WHERE name = 'alice' AND team_id = (SELECT id FROM teams WHERE name = $1)",
        [t.name],
      );
      const { lease } = await t.lead.releaseLease({ leaseId: broken, reason: "alice is gone" });
      expect(lease?.leaseId).toBe(broken);
      await sleep(1_100);
      await env().app.sweeper.sweep();
      const stored = await env().db.query<{ n: bigint }>(
        `SELECT count(*) AS n FROM leases WHERE lease_id = $1`,
        [lapsing?.leaseId],
      );
      expect(stored[0]?.n).toBe(0n);
      const toAlice = await env().db.query<{ n: bigint }>(
        `SELECT count(*) AS n FROM messages m JOIN members a ON a.id = m.recipient_id
         JOIN teams t ON t.id = a.team_id WHERE t.name = $1 AND a.name = 'alice'`,
        [t.name],
      );
      expect(toAlice[0]?.n).toBe(0n);
    });
  },
  {
    leaseTtls: { defaultMs: 60_000, maxMs: 120_000 },
    heartbeatIntervalMs: 60_000,
    sweepIntervalMs: 3_600_000,
  },
);

/** MAX_LEASES_PER_MEMBER=0 is no limit. */
describeEachDatabase(
  "leases without a per-member limit",
  (env) => {
    it("a member takes as many leases as it asks for", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      for (let i = 0; i < 5; i++) {
        await alice.acquireLease({ resource: `task:t${i}` });
      }
      expect((await t.lead.listLeases({ holder: "alice" })).leases).toHaveLength(5);
    });
  },
  { maxLeasesPerMember: 0 },
);
