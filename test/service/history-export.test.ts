import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importRequests } from "../../client/bundle/import-requests.js";
import { verifyBundle } from "../../client/bundle/verify.js";
import { MemberRole, MemberStatus } from "../../gen/team/v1/enums_pb.js";
import { deleteAckedMessages } from "../../server/store/retention.js";
import { bundleOf, exportBundle, linesOf, resigned } from "../support/bundles.js";
import {
  type DatabaseKind,
  databaseKinds,
  openTestDatabase,
  type TestDatabase,
} from "../support/databases.js";
import {
  describeEachDatabase,
  startTestEnv,
  type TeamClient,
  type TestEnv,
  type TestTeam,
} from "../support/harness.js";
import {
  inbox,
  planRequest,
  planResponse,
  refused,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";

/** A team with some of everything a bundle holds: messages, protocol steps, tasks, a refusal. */
async function busyTeam(env: TestEnv): Promise<TestTeam> {
  const t = await env.team("alice", "bob");
  const alice = t.member("alice").client;
  const bob = t.member("bob").client;
  await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
  await t.lead.send({ to: "*", message: text("hello, team — ünïcode ✓") });
  await alice.send({ to: "bob", message: text("parser first?"), messageId: "m-1" });
  const plan = await alice.send({ to: "team-lead", message: planRequest("1. parse\n2. test") });
  await t.lead.send({ to: "alice", message: planResponse(plan.requestId, false, "tests first") });
  await refused(() => alice.send({ to: "bob", message: shutdownRequest("not mine to ask") }));
  await t.lead.createTask({ taskId: "1", subject: "Parse" });
  await alice.createTask({ taskId: "2", subject: "Test it", blockedBy: ["1"] });
  const stop = await t.lead.send({ to: "bob", message: shutdownRequest("done") });
  await bob.send({ to: "team-lead", message: shutdownResponse(stop.requestId, true) });
  const mine = await inbox(alice);
  await alice.ack({ seq: mine[1]?.seq ?? 0n });
  return t;
}

/** Starts a server over a fresh database of `kind`, for the length of the describe block. */
function freshServer(kind: DatabaseKind, importMaxBytes?: number): () => TestEnv {
  let testDb: TestDatabase | undefined;
  let env: (TestEnv & { close(): Promise<void> }) | undefined;
  beforeAll(async () => {
    testDb = await openTestDatabase(kind);
    env = await startTestEnv(kind, testDb, {
      exportSigningKey: generateKeyPairSync("ed25519").privateKey,
      // The big bundle's 1,140 sends from one lead would otherwise meet SEND_RATE on a fast machine.
      sendRate: { perSecond: 100_000, burst: 100_000 },
      ...(importMaxBytes === undefined ? {} : { importMaxBytes }),
    });
  });
  afterAll(async () => {
    await env?.close();
    await testDb?.dispose();
  });
  return () => {
    if (!env) throw new Error("server not started");
    return env;
  };
}

const skipPostgres = databaseKinds().some((k) => k.skip);
for (const [from, to] of [
  ["embedded", "postgres"],
  ["postgres", "embedded"],
] as const) {
  describe.skipIf(skipPostgres)(`ExportTeam → ImportTeam, ${from} → ${to}`, () => {
    const source = freshServer(from);
    const target = freshServer(to);

    it("imports as a new team whose every record equals the exported one, with new tokens", async () => {
      const t = await busyTeam(source());
      const exported = await exportBundle(t.lead);
      const verdict = verifyBundle(exported.bytes, exported.publicKey);
      expect(verdict.failures).toEqual([]);
      expect(Number(exported.counts.envelope)).toBeGreaterThan(5);
      expect(exported.counts.journal).toBeGreaterThan(0n);

      const imported = await target()
        .client()
        .importTeam(importRequests(exported.bytes, { publicKey: exported.publicKey }));
      expect(imported.team).toBe(t.name);
      expect(imported.members.map((m) => [m.name, m.status, m.token !== ""])).toEqual([
        ["team-lead", MemberStatus.ACTIVE, true],
        ["alice", MemberStatus.ACTIVE, true],
        ["bob", MemberStatus.STOPPED, false],
        ["eye", MemberStatus.ACTIVE, true],
      ]);
      expect(imported.counts).toEqual(exported.counts);

      // The imported team exported again: the same records, line for line (but the time the
      // exporting member was last seen: the export itself is a call).
      const leadToken = imported.members[0]?.token ?? "";
      const again = await exportBundle(target().client(leadToken));
      expect(recordsBut(again.bytes, "team-lead")).toEqual(recordsBut(exported.bytes, "team-lead"));

      // The new tokens work and read the same inboxes; the old ones mean nothing here.
      const alice = target().client(imported.members[1]?.token);
      const before = await inbox(t.member("alice").client);
      expect((await inbox(alice)).map((e) => [e.seq, e.from, e.message?.kind])).toEqual(
        before.map((e) => [e.seq, e.from, e.message?.kind]),
      );
      expect((await refused(() => target().client(t.leadToken).listMembers({}))).code).toBe(
        Code.Unauthenticated,
      );
      // A later send continues the inbox after its last imported seq.
      const sent = await target()
        .client(leadToken)
        .send({ to: "alice", message: text("again") });
      expect(sent.deliveries[0]?.seq).toBe((before.at(-1)?.seq ?? 0n) + 1n);
    });

    it("a bundle over 2 MiB (several import chunks, several export pages) round-trips; cut short or changed, it is refused and leaves nothing", async () => {
      const t = await source().team("big");
      const words = "the parser reads every line twice ".repeat(1800); // ~60 KiB
      for (let i = 0; i < 40; i++) {
        await t.lead.send({ to: "big", message: text(`${i} ${words}`) });
      }
      for (let i = 0; i < 1100; i++) {
        await t.lead.send({ to: "big", message: text(`short ${i}`) });
      }
      const exported = await exportBundle(t.lead);
      expect(exported.bytes.length).toBeGreaterThan(2 * 1024 * 1024);
      expect(Number(exported.counts.envelope)).toBe(1140);
      const admin = target().client();
      const { publicKey } = exported;
      const cut = exported.bytes.subarray(0, exported.bytes.length - 100_000);
      const truncated = await refused(() =>
        admin.importTeam(importRequests(cut, { team: `${t.name}-cut`, publicKey })),
      );
      expect(truncated.code).toBe(Code.FailedPrecondition);
      expect(truncated.message).toMatch(/^bundle-verify: .*format: /);
      const lines = linesOf(exported.bytes);
      // A message's body is in the bundle as bytea hex ("\\x…"), not as text.
      const hex = (text: string) => Buffer.from(text).toString("hex");
      const at = lines.findIndex((l) => l.includes(hex("short 700")));
      expect(at, "the line of the message 'short 700'").toBeGreaterThan(0);
      const changed = bundleOf(
        lines.map((l, i) => (i === at ? l.replace(hex("short 700"), hex("short 701")) : l)),
      );
      const tampered = await refused(() =>
        admin.importTeam(importRequests(changed, { team: `${t.name}-changed`, publicKey })),
      );
      expect(tampered.message).toMatch(/^bundle-verify: .*sha256: /);
      const [row] = await target().db.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM teams WHERE name LIKE $1",
        [`${t.name}-%`],
      );
      expect(row?.n).toBe("0");

      const imported = await admin.importTeam(importRequests(exported.bytes, { publicKey }));
      expect(imported.counts).toEqual(exported.counts);
      const again = await exportBundle(target().client(imported.members[0]?.token));
      expect(recordsBut(again.bytes, "team-lead")).toEqual(recordsBut(exported.bytes, "team-lead"));
    }, 240_000);
  });
}

for (const kind of ["embedded", "postgres"] as const) {
  describe.skipIf(kind === "postgres" && skipPostgres)(`ImportTeam's size cap, ${kind}`, () => {
    const server = freshServer(kind, 4096);

    it("refuses a bundle over IMPORT_MAX_BYTES with ResourceExhausted, naming it, and stores nothing", async () => {
      const t = await busyTeam(server());
      const { bytes, publicKey } = await exportBundle(t.lead);
      expect(bytes.length).toBeGreaterThan(4096);
      const over = await refused(() =>
        server()
          .client()
          .importTeam(importRequests(bytes, { team: `${t.name}-big`, publicKey })),
      );
      expect(over.code).toBe(Code.ResourceExhausted);
      expect(over.message).toMatch(/^import-max-bytes: .*IMPORT_MAX_BYTES \(4096 bytes\)/);
      const [row] = await server().db.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM teams WHERE name = $1",
        [`${t.name}-big`],
      );
      expect(row?.n).toBe("0");
    });
  });
}

describeEachDatabase("ExportTeam and ImportTeam", (env) => {
  it("the lead and an observer export; a teammate is refused; another team's export holds nothing of this one", async () => {
    const t = await busyTeam(env());
    const eye = await t.lead.addMember({ name: "eye2", role: MemberRole.OBSERVER });
    const byObserver = await exportBundle(env().client(eye.token));
    expect(verifyBundle(byObserver.bytes).failures).toEqual([]);
    const mate = await refused(() => exportBundle(t.member("alice").client));
    expect(mate.code).toBe(Code.PermissionDenied);
    expect(mate.message).toMatch(/^export-lead-or-observer: /);
    const other = await env().team("carol");
    await other.lead.send({ to: "carol", message: text("ours") });
    const theirs = await exportBundle(other.lead);
    const text_ = theirs.bytes.toString("utf8");
    expect(text_).not.toContain(t.name);
    expect(text_).not.toContain("alice");
    expect(theirs.counts.envelope).toBe(1n);
    expect(theirs.counts.member).toBe(2n);
  });

  it("verify and import refuse a changed byte, a removed record and another key, naming what failed", async () => {
    const t = await busyTeam(env());
    const { bytes, publicKey } = await exportBundle(t.lead);
    const lines = linesOf(bytes);
    const at = lines.findIndex((l) => l.includes('"message_id":"m-1"'));
    expect(at).toBeGreaterThan(0);
    const changed = bundleOf(
      lines.map((l, i) => (i === at ? l.replace(/"body":"\\\\x0a/, '"body":"\\\\x0b') : l)),
    );
    expect(changed.length).toBe(bytes.length);
    expect(changed.equals(bytes)).toBe(false);
    const removed = bundleOf(lines.filter((_, i) => i !== at));
    const other = generateKeyPairSync("ed25519");
    const otherPem = createPublicKey(other.privateKey).export({
      type: "spki",
      format: "pem",
    }) as string;
    const forged = resigned(removed, other.privateKey, otherPem);

    expect(verifyBundle(changed, publicKey).failures).toEqual([expect.stringMatching(/^sha256: /)]);
    const removedFailures = verifyBundle(removed, publicKey).failures;
    expect(removedFailures[0]).toMatch(/^sha256: /);
    const left = countOf(removed, "envelope");
    expect(removedFailures).toContain(
      `counts: ${left} envelope record(s) in the bundle, the manifest says ${left + 1}`,
    );
    expect(verifyBundle(forged, publicKey).failures).toEqual([
      expect.stringMatching(
        /^key: the bundle is signed by key [0-9a-f]{16}, not by the expected key/,
      ),
    ]);
    expect(verifyBundle(forged).failures).toEqual([]); // only a key you trust tells a forgery

    const admin = env().client();
    for (const [bundle, failed] of [
      [changed, "sha256"],
      [removed, "counts"],
      [forged, "key"],
    ] as const) {
      const r = await refused(() =>
        admin.importTeam(importRequests(bundle, { team: `${t.name}-copy`, publicKey })),
      );
      expect(r.code).toBe(Code.FailedPrecondition);
      expect(r.message).toMatch(new RegExp(`^bundle-verify: .*${failed}: `));
      expect(r.detail?.rule).toBe("bundle-verify");
    }
    // Without a key in the request only the server's own key is trusted: the team deleted,
    // its bundle loads back.
    // (A team without journal lines: DeleteTeam of one with them fails on the journal's
    // append-only trigger, a fault of DeleteTeam's own.)
    const small = await env().team("dora");
    await small.lead.send({ to: "dora", message: text("moving house") });
    const smallBundle = (await exportBundle(small.lead)).bytes;
    await small.lead.deleteTeam({ team: small.name });
    const own = await admin.importTeam(importRequests(smallBundle));
    expect(own.team).toBe(small.name);
    expect(own.counts.envelope).toBe(1n);
    const untrusted = await refused(() =>
      admin.importTeam(importRequests(forged, { team: `${t.name}-x` })),
    );
    expect(untrusted.message).toMatch(/key: /);
    // Nothing of a refused import was stored.
    const [row] = await env().db.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM teams WHERE name = $1",
      [`${t.name}-x`],
    );
    expect(row?.n).toBe("0");
  });

  it("a bundle split anywhere (a byte per request at its start) loads; team and key only on the first request", async () => {
    // A team without journal lines, deleted before its bundle loads back (its records' keys
    // are this server's; DeleteTeam of a team with journal lines fails, see above).
    const small = await env().team("erin");
    for (const word of ["one", "two", "three"]) {
      await small.lead.send({ to: "erin", message: text(word) });
    }
    const { bytes } = await exportBundle(small.lead);
    await small.lead.deleteTeam({ team: small.name });
    // Requests made here, not by importRequests (which regroups into 256 KiB chunks).
    async function* pieces() {
      for (let i = 0; i < 300; i++) yield { chunk: bytes.subarray(i, i + 1) };
      yield { chunk: bytes.subarray(300) };
    }
    const imported = await env().client().importTeam(pieces());
    expect(imported.team).toBe(small.name);
    expect(imported.counts.envelope).toBe(3n);
    const erin = env().client(imported.members.find((m) => m.name === "erin")?.token);
    expect((await inbox(erin)).map((e) => e.seq)).toEqual([1n, 2n, 3n]);
    const publicKey = "";
    async function* late() {
      yield { chunk: bytes.subarray(0, 10), publicKey };
      yield { chunk: bytes.subarray(10), team: `${small.name}-late` };
    }
    const r = await refused(() => env().client().importTeam(late()));
    expect(r.code).toBe(Code.InvalidArgument);
    expect(r.message).toMatch(/^size-shape: team and public_key go in the first request/);
  });

  it("an import into a server that holds the team, or under a taken name, is refused whole", async () => {
    const t = await busyTeam(env());
    const { bytes } = await exportBundle(t.lead);
    const taken = await refused(() => env().client().importTeam(importRequests(bytes)));
    expect(taken.code).toBe(Code.AlreadyExists);
    expect(taken.message).toContain(`team "${t.name}" already exists`);
    const sameRecords = await refused(() =>
      env()
        .client()
        .importTeam(importRequests(bytes, { team: `${t.name}-2` })),
    );
    expect(sameRecords.code).toBe(Code.AlreadyExists);
    expect(sameRecords.message).toMatch(/^bundle-records: this server already holds a record/);
  });
});

describeEachDatabase("a copy of a team on the server it came from", (env) => {
  /** A team of threads and searchable words (no protocol requests: their ids are server-wide). */
  async function wordyTeam() {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    await t.lead.send({ to: "*", message: text("copied wombat for everyone") });
    await alice.send({ to: "bob", message: text("the parser eats quaggas") });
    const parent = (await inbox(bob)).find((e) => e.from === "alice");
    await bob.send({ to: "alice", message: text("quaggas fixed"), replyTo: parent?.id ?? "" });
    return t;
  }

  /** What `client` finds for `query`, its texts sorted. */
  const findsOf = async (client: TeamClient, query: string) =>
    (await client.searchMessages({ query })).hits
      .map((h) => (h.envelope?.message?.kind.case === "text" ? h.envelope.message.kind.value : ""))
      .sort();

  /** The threads `client` lists: id, count and its latest text. */
  const threadsOf = async (client: TeamClient) =>
    (await client.listThreads({})).threads.map((th) => [
      th.threadId,
      th.messageCount,
      th.latest?.message?.kind.value,
    ]);

  it("an imported copy is searched, threaded and indexed as its own team; the original's retention and deletion leave it whole", async () => {
    const t = await wordyTeam();
    const bundle = await exportBundle(t.lead);
    const copy = await env()
      .client()
      .importTeam(importRequests(bundle.bytes, { team: `${t.name}-copy` }));
    const token = (name: string) => copy.members.find((m) => m.name === name)?.token ?? "";
    const copyLead = env().client(token("team-lead"));
    const copyAlice = env().client(token("alice"));
    const copyBob = env().client(token("bob"));
    const quaggas = ["quaggas fixed", "the parser eats quaggas"];

    // The copy's envelopes have the original's ids; each team finds its own.
    const bothFind = async () => {
      expect(await findsOf(copyLead, "quagga")).toEqual(quaggas);
      expect(await findsOf(copyLead, "wombat")).toEqual(["copied wombat for everyone"]);
      expect(await findsOf(copyAlice, "quagga")).toEqual(quaggas);
      expect(await findsOf(copyBob, "wombat")).toEqual(["copied wombat for everyone"]);
    };
    await bothFind();
    expect(await findsOf(t.lead, "quagga")).toEqual(quaggas);
    for (const [original, copied] of [
      [t.lead, copyLead],
      [t.member("alice").client, copyAlice],
      [t.member("bob").client, copyBob],
    ] as const) {
      expect(await threadsOf(copied)).toEqual(await threadsOf(original));
    }
    const [quaggaThread] = await threadsOf(copyAlice);
    const thread = await copyAlice.getThread({ threadId: String(quaggaThread?.[0]) });
    expect(thread.envelopes.map((e) => e.message?.kind.value)).toEqual([
      "the parser eats quaggas",
      "quaggas fixed",
    ]);
    const [copyTeam] = await env().db.query<{ id: number }>(
      "SELECT id FROM teams WHERE name = $1",
      [`${t.name}-copy`],
    );
    const copyRows = async () =>
      (
        await env().db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM message_search WHERE team_id = $1",
          [copyTeam?.id],
        )
      )[0]?.n;
    expect(await copyRows()).toBe(3);

    // Retention of the original (alice acks there, after the export: the copy's cursor is
    // the exported one) takes the original's words, not the copy's.
    const alice = t.member("alice").client;
    await alice.ack({ seq: (await inbox(alice)).at(-1)?.seq ?? 0n });
    await deleteAckedMessages(env().db, new Date(Date.now() + 60_000), 1000);
    expect(await findsOf(alice, "quagga")).toEqual(["the parser eats quaggas"]);
    expect(await copyRows()).toBe(3);
    await bothFind();
    await t.lead.deleteTeam({ team: t.name });
    expect(await copyRows()).toBe(3);
    await bothFind();
  });

  it("an older bundle whose envelopes carry search_text (migration 012's column) imports and is searched", async () => {
    const t = await wordyTeam();
    const { bytes } = await exportBundle(t.lead);
    const withText = bundleOf(
      linesOf(bytes).map((l) => {
        const r = JSON.parse(l);
        return r.kind === "envelope"
          ? JSON.stringify({ ...r, search_text: "text: stale words" })
          : l;
      }),
    );
    const key = generateKeyPairSync("ed25519");
    const pem = createPublicKey(key.privateKey).export({ type: "spki", format: "pem" }) as string;
    const old = resigned(withText, key.privateKey, pem);
    expect(old.toString("utf8")).toContain('"search_text"');
    const copy = await env()
      .client()
      .importTeam(importRequests(old, { team: `${t.name}-old`, publicKey: pem }));
    const lead = env().client(copy.members.find((m) => m.name === "team-lead")?.token);
    // The words are the body's, rendered anew; the bundle's search_text is not stored.
    expect(await findsOf(lead, "quagga")).toEqual(["quaggas fixed", "the parser eats quaggas"]);
    expect(await findsOf(lead, "stale")).toEqual([]);
  });
});

/** A bundle's record lines, `member`'s last_seen_at left out. */
function recordsBut(bundle: Buffer, member: string): unknown[] {
  return linesOf(bundle)
    .slice(0, -2)
    .map((l) => JSON.parse(l))
    .map((r) => (r.kind === "member" && r.name === member ? { ...r, last_seen_at: "" } : r));
}

function countOf(bundle: Buffer, kind: string): number {
  return linesOf(bundle).filter((l) => JSON.parse(l).kind === kind).length;
}
