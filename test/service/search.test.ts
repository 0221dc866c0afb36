import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole } from "../../gen/team/v1/enums_pb.js";
import type { SearchMessagesRequestSchema } from "../../gen/team/v1/history_pb.js";
import { deleteAckedMessages } from "../../server/store/retention.js";
import { searchMessages } from "../../server/store/search.js";
import { catchUpSearch } from "../../server/store/search-index.js";
import { describeEachDatabase, type TeamClient } from "../support/harness.js";
import {
  inbox,
  planRequest,
  planResponse,
  refused,
  shutdownRequest,
  text,
} from "../support/protocol-helpers.js";

type Query = MessageInitShape<typeof SearchMessagesRequestSchema>;

/** The texts (or case names) of what a search finds, best first. */
async function found(client: TeamClient, query: Query | string): Promise<string[]> {
  const req = typeof query === "string" ? { query } : query;
  const res = await client.searchMessages(req);
  return res.hits.map((h) => {
    const k = h.envelope?.message?.kind;
    return k?.case === "text" ? k.value : String(k?.case);
  });
}

describeEachDatabase("SearchMessages: full text over what the caller may read", (env) => {
  it("finds words in every kind of message, with a highlighted snippet", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    await alice.send({ to: "team-lead", message: text("the tokenizer drops tabs") });
    const plan = await alice.send({
      to: "team-lead",
      message: planRequest("1. rewrite the quuxparser"),
    });
    await team.lead.send({
      to: "alice",
      message: planResponse(plan.requestId, false, "split the wibblework first"),
    });
    const shut = await team.lead.send({ to: "alice", message: shutdownRequest("frobnicate done") });
    await team.lead.cancelRequest({ requestId: shut.requestId });

    expect(await found(team.lead, "tokenizer")).toEqual(["the tokenizer drops tabs"]);
    expect(await found(team.lead, "quuxparser")).toEqual(["planApprovalRequest"]);
    expect(await found(team.lead, "wibblework")).toEqual(["planApprovalResponse"]);
    expect(await found(team.lead, "frobnicate")).toEqual(["shutdownRequest"]);
    // The server's own notice, by the words of its detail.
    expect(await found(alice, { query: "canceled", kind: "request_update" })).toEqual([
      "requestUpdate",
    ]);
    // English stemming: "tab" finds "tabs".
    const hit = (await team.lead.searchMessages({ query: "tab" })).hits[0];
    expect(hit?.snippet).toContain("«tabs»");
    expect(hit?.rank).toBeGreaterThan(0);
  });

  it("ranks better matches first, and pages without repeating", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    await alice.send({ to: "team-lead", message: text("lexer") });
    await alice.send({ to: "team-lead", message: text("lexer lexer lexer, the lexer again") });
    for (const n of [1, 2, 3]) {
      await alice.send({ to: "team-lead", message: text(`other lexer note ${n}`) });
    }
    const first = await team.lead.searchMessages({ query: "lexer", pageSize: 2 });
    expect(first.hits[0]?.envelope?.message?.kind.value).toBe("lexer lexer lexer, the lexer again");
    const ranks = first.hits.map((h) => h.rank);
    expect(ranks[0]).toBeGreaterThan(ranks[1] ?? 0);
    const seen = first.hits.map((h) => h.envelope?.id);
    let token = first.nextPageToken;
    while (token) {
      const next = await team.lead.searchMessages({
        query: "lexer",
        pageSize: 2,
        pageToken: token,
      });
      seen.push(...next.hits.map((h) => h.envelope?.id));
      token = next.nextPageToken;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
  });

  it("filters by from, to, kind and time", async () => {
    const team = await env().team("alice", "bob");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    await alice.send({ to: "bob", message: text("gizmo from alice") });
    await bob.send({ to: "team-lead", message: text("gizmo from bob") });
    const cut = new Date();
    await team.lead.send({ to: "*", message: text("gizmo for all") });
    expect(await found(team.lead, { query: "gizmo", from: "alice" })).toEqual(["gizmo from alice"]);
    expect(await found(team.lead, { query: "gizmo", to: "team-lead" })).toEqual(["gizmo from bob"]);
    expect(await found(team.lead, { query: "gizmo", to: "*" })).toEqual(["gizmo for all"]);
    expect(await found(team.lead, { query: "gizmo", kind: "shutdown_request" })).toEqual([]);
    const seconds = BigInt(Math.floor(cut.getTime() / 1000));
    const nanos = (cut.getTime() % 1000) * 1e6;
    expect(await found(team.lead, { query: "gizmo", since: { seconds, nanos } })).toEqual([
      "gizmo for all",
    ]);
    expect((await found(team.lead, { query: "gizmo", until: { seconds, nanos } })).sort()).toEqual([
      "gizmo from alice",
      "gizmo from bob",
    ]);
  });

  it("visibility matches ReadInbox: teammate, lead, observer, removed member, other team", async () => {
    const team = await env().team("alice", "bob", "carol");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    const carol = team.member("carol").client;
    const eye = env().client(
      (await team.lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token,
    );
    await alice.send({ to: "bob", message: text("zebra alice to bob") });
    await bob.send({ to: "team-lead", message: text("zebra bob to lead") });
    await team.lead.send({ to: "*", message: text("zebra for everyone") });
    const sorted = async (c: TeamClient) => (await found(c, "zebra")).sort();
    expect(await sorted(alice)).toEqual(["zebra alice to bob", "zebra for everyone"]);
    expect(await sorted(bob)).toEqual([
      "zebra alice to bob",
      "zebra bob to lead",
      "zebra for everyone",
    ]);
    expect(await sorted(carol)).toEqual(["zebra for everyone"]);
    const all = ["zebra alice to bob", "zebra bob to lead", "zebra for everyone"];
    // The lead and an observer: the team, a broadcast once.
    expect(await sorted(team.lead)).toEqual(all);
    expect(await sorted(eye)).toEqual(all);
    const other = await env().team("zed");
    await other.lead.send({ to: "zed", message: text("zebra elsewhere") });
    expect(await found(other.lead, "zebra")).toEqual(["zebra elsewhere"]);
    await team.lead.removeMember({ name: "alice" });
    expect((await refused(() => alice.searchMessages({ query: "zebra" }))).code).toBe(
      Code.Unauthenticated,
    );
  });

  it("a reader's copies checked per match (few matches) or hashed (many) find the same messages", async () => {
    const team = await env().team("alice", "bob", "carol");
    await team.member("alice").client.send({ to: "bob", message: text("wallaby alice to bob") });
    await team.member("bob").client.send({ to: "team-lead", message: text("wallaby bob to lead") });
    await team.lead.send({ to: "*", message: text("wallaby for everyone") });
    await team.lead.send({ to: "bob", message: text("wallaby lead to bob") });
    // The newest matches: none of the readers below may read them (or their filter drops them).
    for (const n of [1, 2]) await team.lead.send({ to: "carol", message: text(`wallaby ${n}`) });
    const rows = await env().db.query<{ id: number; team_id: number; name: string }>(
      `SELECT m.id, m.team_id, m.name FROM members m JOIN teams t ON t.id = m.team_id
       WHERE t.name = $1`,
      [team.name],
    );
    const teamId = rows[0]?.team_id ?? 0;
    await catchUpSearch(env().db, teamId);
    const id = (name: string) => rows.find((r) => r.name === name)?.id ?? 0;
    // probeMatches 0: the hash, whatever the count; 1,000: the probe (6 matches). The window
    // is what the reader should find, so a match it may not read taking a place shows.
    const texts = async (
      name: string,
      wholeTeam: boolean,
      filter: object,
      window: number,
      probeMatches: number,
    ) =>
      (
        await searchMessages(
          env().db,
          { teamId, memberId: id(name), wholeTeam },
          { query: "wallaby", ...filter },
          0,
          10,
          window,
          probeMatches,
        )
      )
        .map((h) => `${h.message.fromName}>${h.message.toName}`)
        .sort();
    const cases: [string, boolean, object, string[]][] = [
      ["alice", false, {}, ["alice>bob", "team-lead>*"]],
      ["bob", false, {}, ["alice>bob", "bob>team-lead", "team-lead>*", "team-lead>bob"]],
      ["bob", false, { from: "team-lead" }, ["team-lead>*", "team-lead>bob"]],
      ["team-lead", true, { to: "bob" }, ["alice>bob", "team-lead>bob"]],
    ];
    for (const [name, wholeTeam, filter, expected] of cases) {
      expect(await texts(name, wholeTeam, filter, expected.length, 1_000)).toEqual(expected);
      expect(await texts(name, wholeTeam, filter, expected.length, 0)).toEqual(expected);
    }
  });

  it("a hostile query gets results or InvalidArgument naming query, never Internal", async () => {
    const team = await env().team("alice");
    await team.lead.send({ to: "alice", message: text("plain words here") });
    const queries = [
      '"unclosed',
      '""',
      "-",
      "or",
      "a or or b",
      "-(a | b) & !c",
      "a:* & b:*",
      "'a' <-> 'b'",
      "!!!",
      "(((",
      "\\",
      "the",
      "🙂 ünïcödé 中文 العربية",
      "\u200b\u200d\ufeff",
      "\ud800",
      "x".repeat(1024),
      "word ".repeat(204),
      `${"a or ".repeat(204)}b`,
      "x".repeat(1025),
      "a".repeat(20_000),
      "word ".repeat(20_000),
      "a\u0000b",
      "  ",
    ];
    for (const query of queries) {
      const outcome = await team.lead.searchMessages({ query }).then(
        () => undefined,
        (e) => ConnectError.from(e),
      );
      if (outcome !== undefined) {
        expect(outcome.code, JSON.stringify(query.slice(0, 40))).toBe(Code.InvalidArgument);
        expect(outcome.rawMessage).toMatch(/query/);
      }
    }
    expect(await found(team.lead, "plain -missing")).toEqual(["plain words here"]);
  });

  it("retention: a message deleted for its age is found no more", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    await team.lead.send({ to: "alice", message: text("ephemeral xylophone") });
    expect(await found(alice, "xylophone")).toHaveLength(1);
    const last = (await inbox(alice)).at(-1);
    await alice.ack({ seq: last?.seq ?? 0n });
    await deleteAckedMessages(env().db, new Date(Date.now() + 60_000), 1000);
    expect(await found(alice, "xylophone")).toEqual([]);
    expect(await found(team.lead, "xylophone")).toEqual([]);
    expect((await alice.listThreads({})).threads).toEqual([]);
    // Retention applies to the index itself, not only to what a search may join.
    expect(
      await env().db.query("SELECT 1 FROM message_search WHERE search_text LIKE '%xylophone%'"),
    ).toEqual([]);
  });

  it("a broadcast acked by some recipients keeps its words until its last copy is deleted", async () => {
    const team = await env().team("alice", "bob");
    const alice = team.member("alice").client;
    const bob = team.member("bob").client;
    await team.lead.send({ to: "*", message: text("shared quokka") });
    expect(await found(bob, "quokka")).toEqual(["shared quokka"]);
    const indexed = () =>
      env().db.query("SELECT 1 FROM message_search WHERE search_text LIKE '%quokka%'");
    await alice.ack({ seq: (await inbox(alice)).at(-1)?.seq ?? 0n });
    await deleteAckedMessages(env().db, new Date(Date.now() + 60_000), 1000);
    expect(await found(alice, "quokka")).toEqual([]);
    expect(await found(bob, "quokka")).toEqual(["shared quokka"]);
    expect(await indexed()).toHaveLength(1);
    await bob.ack({ seq: (await inbox(bob)).at(-1)?.seq ?? 0n });
    await deleteAckedMessages(env().db, new Date(Date.now() + 60_000), 1000);
    expect(await indexed()).toEqual([]);
  });

  it("the indexer makes a send searchable soon after its commit, without a search asking", async () => {
    const team = await env().team("alice");
    await team.lead.send({ to: "alice", message: text("prompt wombat") });
    // The store's search alone (no SearchMessages, which indexes its team's queue first):
    // what the background indexer made of the send within a bounded wait.
    const [alice] = await env().db.query<{ id: number; team_id: number }>(
      "SELECT m.id, m.team_id FROM members m JOIN teams t ON t.id = m.team_id WHERE t.name = $1 AND m.name = 'alice'",
      [team.name],
    );
    const reader = { teamId: alice?.team_id ?? 0, memberId: alice?.id ?? 0, wholeTeam: false };
    const deadline = Date.now() + 5_000;
    let hits = await searchMessages(env().db, reader, { query: "wombat" }, 0, 10);
    while (hits.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      hits = await searchMessages(env().db, reader, { query: "wombat" }, 0, 10);
    }
    expect(hits.map((h) => h.snippet)).toEqual(["text: prompt «wombat»"]);
    expect(await env().db.query("SELECT 1 FROM search_pending")).toEqual([]);
  });

  it("ranks the newest matches only (SEARCH_WINDOW), after visibility and filters", async () => {
    const team = await env().team("alice", "bob");
    await team.lead.send({ to: "alice", message: text("gadget gadget gadget, the old best") });
    for (const n of [1, 2, 3]) await team.lead.send({ to: "bob", message: text(`gadget ${n}`) });
    const [lead, alice] = await env().db.query<{ id: number; team_id: number }>(
      `SELECT m.id, m.team_id FROM members m JOIN teams t ON t.id = m.team_id
       WHERE t.name = $1 AND m.name IN ('team-lead', 'alice') ORDER BY m.role <> 'lead'`,
      [team.name],
    );
    await catchUpSearch(env().db, lead?.team_id ?? 0);
    const search = async (member: typeof lead, wholeTeam: boolean, window: number) =>
      (
        await searchMessages(
          env().db,
          { teamId: member?.team_id ?? 0, memberId: member?.id ?? 0, wholeTeam },
          { query: "gadget" },
          0,
          10,
          window,
        )
      ).map((h) => h.snippet.replace(/[«»]/g, ""));
    // All four ranked: the oldest has the word three times.
    expect((await search(lead, true, 10))[0]).toBe("text: gadget gadget gadget, the old best");
    // The newest two only: the old best is not among them; ranked among themselves.
    const two = await search(lead, true, 2);
    expect(two).toHaveLength(2);
    expect(two).not.toContain("text: gadget gadget gadget, the old best");
    // A teammate's window is taken over what it may read: alice's one match is older than
    // the team's newest two, and still found.
    expect(await search(alice, false, 2)).toEqual(["text: gadget gadget gadget, the old best"]);
    // Filters too: bob's messages are the newest, to: alice reaches past them.
    const toAlice = await searchMessages(
      env().db,
      { teamId: lead?.team_id ?? 0, memberId: lead?.id ?? 0, wholeTeam: true },
      { query: "gadget", to: "alice" },
      0,
      10,
      1,
    );
    expect(toAlice.map((h) => h.snippet)).toEqual([
      "text: «gadget» «gadget» «gadget», the old best",
    ]);
  });

  it("queued envelopes (migration 013 queues what 012's backfill had not reached) are indexed", async () => {
    const team = await env().team("alice");
    await team.lead.send({ to: "alice", message: text("ancient marmalade") });
    await env().app.searchIndexer.idle();
    await env().db.query(
      `WITH gone AS (DELETE FROM message_search WHERE search_text LIKE '%marmalade%'
                     RETURNING envelope_id, team_id)
       INSERT INTO search_pending (envelope_id, team_id) SELECT * FROM gone`,
    );
    expect(await found(team.lead, "marmalade")).toEqual(["ancient marmalade"]);
    expect(await env().db.query("SELECT 1 FROM search_pending")).toEqual([]);
  });
});
