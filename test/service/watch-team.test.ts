import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { MemberChange, MemberRole, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import { describeEachDatabase, raceTitle } from "../support/harness.js";
import { planRequest, planResponse, text } from "../support/protocol-helpers.js";
import { eventKey, expectFeedOrder, watch, watchersParked } from "../support/team-watch.js";

const envelopes = (events: TeamEvent[]) => events.filter((e) => e.change.case === "envelope");

describeEachDatabase("WatchTeam: the team feed", (env, kind) => {
  /** What the database holds for a team: the feed must deliver exactly this many. */
  async function stored(team: string) {
    const [row] = await env().db.query<{ envelopes: bigint; requests: bigint; members: bigint }>(
      `SELECT (SELECT count(*) FROM messages m WHERE m.team_id = t.id) AS envelopes,
              (SELECT count(*) FROM request_events e WHERE e.team_id = t.id) AS requests,
              (SELECT count(*) FROM member_events e WHERE e.team_id = t.id) AS members
       FROM teams t WHERE t.name = $1`,
      [team],
    );
    if (!row) throw new Error(`no team ${team}`);
    return {
      envelopes: Number(row.envelopes),
      requests: Number(row.requests),
      members: Number(row.members),
    };
  }

  function counts(events: TeamEvent[]) {
    return {
      envelopes: events.filter((e) => e.change.case === "envelope").length,
      requests: events.filter((e) => e.change.case === "request").length,
      members: events.filter((e) => e.change.case === "member").length,
    };
  }

  it("shows a send, a plan's request and its approval, and member changes, in order", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    const w = watch(team.lead);
    await team.lead.send({ to: "alice", message: text("start") });
    const asked = await alice.send({ to: "team-lead", message: planRequest("1. do it") });
    await team.lead.send({ to: "alice", message: planResponse(asked.requestId, true) });
    await w.until("the approval's envelope", (x) => envelopes(x.events()).length === 3);
    const events = w.events();
    expectFeedOrder(events);
    expect(events.map(eventKey)).toEqual([
      expect.stringMatching(/^member team-lead /),
      expect.stringMatching(/^member alice /),
      "envelope alice#1",
      "envelope team-lead#1",
      `request ${asked.requestId} ${RequestStatus.PENDING}`,
      `request ${asked.requestId} ${RequestStatus.APPROVED}`,
      // The lead's mode is default: alice's default stays, no mode change event.
      "envelope alice#2",
    ]);
    const approved = events[5]?.change;
    expect(approved?.case === "request" && approved.value.request?.response?.kind.case).toBe(
      "planApprovalResponse",
    );
    w.stop();
  });

  // 90 s: on the embedded database the sends alone take most of vitest's default 30 s on a
  // loaded machine.
  it(raceTitle(
    kind,
    "keeps every inbox's and request's order, with no gap, while 8 members send at once",
  ), async () => {
    const names = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"];
    const team = await env().team(...names);
    const w = watch(team.lead);
    await watchersParked(env().app, 1);
    // Each member: texts to the lead, to a neighbour, a broadcast now and then, and a plan the
    // lead answers (approve or reject) while the others keep sending.
    await Promise.all(
      names.map(async (name, i) => {
        const me = team.member(name).client;
        const neighbour = names[(i + 1) % names.length] as string;
        for (let k = 0; k < 25; k++) {
          await Promise.all([
            me.send({ to: "team-lead", message: text(`${name} ${k}`) }),
            me.send({ to: neighbour, message: text(`${name} to ${neighbour} ${k}`) }),
            k % 10 === 0 ? me.send({ to: "*", message: text(`${name} all ${k}`) }) : undefined,
          ]);
          if (k % 8 === 0) {
            const asked = await me.send({ to: "team-lead", message: planRequest(`plan ${k}`) });
            await team.lead.send({
              to: name,
              message: planResponse(asked.requestId, k % 16 === 0, "revise"),
            });
          }
        }
      }),
    );
    const want = await stored(team.name);
    await w.until("every stored event", (x) => {
      const c = counts(x.events());
      return (
        c.envelopes >= want.envelopes && c.requests >= want.requests && c.members >= want.members
      );
    });
    const events = w.events();
    expect(counts(events)).toEqual(want);
    expectFeedOrder(events);
    w.stop();
  }, 90_000);

  it("shows the caller's team only", async () => {
    const a = await env().team("amy");
    const b = await env().team("bea");
    await a.lead.send({ to: "amy", message: text("for team a") });
    await b.lead.send({ to: "bea", message: text("for team b") });
    const w = watch(b.lead);
    await w.until("b's envelope", (x) => envelopes(x.events()).length >= 1);
    w.stop();
    const names = w
      .events()
      .map((e) =>
        e.change.case === "envelope"
          ? e.change.value.envelope?.team
          : e.change.case === "member"
            ? e.change.value.member?.name
            : "",
      );
    expect(names).toEqual(["team-lead", "bea", b.name]);
  });

  it("a teammate may not watch the team (watch-lead-or-observer)", async () => {
    const team = await env().team("bob");
    const w = watch(team.member("bob").client);
    const err = await w.ended;
    expect(err?.code).toBe(Code.PermissionDenied);
    expect(err?.rawMessage).toMatch(/^watch-lead-or-observer: /);
  });

  it("refuses a cursor it did not give out, naming the field", async () => {
    const team = await env().team();
    for (const cursor of ["nonsense", "5:3:", "3:9:9", "3:9:5,4", "1:1:/1:1:", "1:1:/1:1:/x"]) {
      const err = await watch(team.lead, { cursor }).ended;
      expect(err?.code, cursor).toBe(Code.InvalidArgument);
      expect(err?.rawMessage, cursor).toMatch(/^size-shape: cursor /);
    }
  });

  it("added observers and removed members are member events", async () => {
    const team = await env().team("carol");
    const w = watch(team.lead, { fromNow: true });
    await watchersParked(env().app, 1);
    await team.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
    await team.lead.removeMember({ name: "carol" });
    await w.until("two member events", (x) => x.events().length >= 2);
    expect(
      w
        .events()
        .map((e) =>
          e.change.case === "member"
            ? [e.change.value.change, e.change.value.member?.name, e.change.value.member?.role]
            : e.change.case,
        ),
    ).toEqual([
      [MemberChange.ADDED, "eye", MemberRole.OBSERVER],
      [MemberChange.REMOVED, "carol", MemberRole.TEAMMATE],
    ]);
    w.stop();
  });
});

describeEachDatabase("WatchTeam: resuming from a cursor", (env) => {
  it("replays exactly the rest, from any response's cursor, across page boundaries", async () => {
    const team = await env().team("ann", "ben");
    const ann = team.member("ann").client;
    // More than a page (256 events): the first pages of a replay end inside a window, so
    // their cursors carry a window; later ones are settled.
    for (let k = 0; k < 6; k++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 ? ann : team.lead).send({ to: i % 2 ? "ben" : "ann", message: text(`${k}.${i}`) }),
        ),
      );
    }
    const asked = await ann.send({ to: "team-lead", message: planRequest("plan") });
    await team.lead.send({ to: "ann", message: planResponse(asked.requestId, false, "no") });
    const total = (
      await env().db.query<{ n: bigint }>(
        `SELECT (SELECT count(*) FROM messages m JOIN teams t ON t.id = m.team_id WHERE t.name = $1)
            + (SELECT count(*) FROM request_events e JOIN teams t ON t.id = e.team_id WHERE t.name = $1)
            + (SELECT count(*) FROM member_events e JOIN teams t ON t.id = e.team_id WHERE t.name = $1) AS n`,
        [team.name],
      )
    )[0]?.n;
    const all = watch(team.lead);
    await all.until("every event", (x) => x.events().length === Number(total));
    all.stop();
    // The feed as delivered, and the cursor of each event; barriers are appended below.
    const feed = all.events();
    const cursors = all.responses.filter((r) => r.kind.case === "event").map((r) => r.cursor);
    expectFeedOrder(feed);
    const windowed = cursors.findIndex((c) => c.includes("/"));
    expect(
      windowed,
      "a replay of more than a page has a cursor inside a window",
    ).toBeGreaterThanOrEqual(0);
    for (const k of [0, windowed, 255, 256, 300, feed.length - 2]) {
      const cursor = cursors[k];
      if (cursor === undefined) throw new Error(`no response ${k}`);
      const rest = feed.slice(k + 1).map(eventKey);
      const resumed = watch(team.lead, { cursor });
      await resumed.until(
        `the ${rest.length} events after #${k}`,
        (x) => x.events().length >= rest.length,
      );
      // Everything after, nothing before and nothing twice; the order of independent events
      // may differ (one window instead of several), each inbox's and request's may not.
      expect(resumed.events().map(eventKey).sort(), `resumed after #${k}`).toEqual(
        [...rest].sort(),
      );
      expectFeedOrder(resumed.events(), false);
      // A barrier: a new event comes next, not a late duplicate.
      await team.lead.send({ to: "ben", message: text(`barrier ${k}`) });
      await resumed.until("the barrier", (x) => x.events().length > rest.length);
      const barrier = resumed.events().slice(rest.length);
      expect(barrier.map(eventKey)).toEqual([expect.stringMatching(/^envelope ben#/)]);
      resumed.stop();
      // The barrier is part of the feed from here on.
      feed.push(...barrier);
      cursors.push(resumed.responses.filter((r) => r.kind.case === "event").at(-1)?.cursor ?? "");
    }
  });

  it("from_now starts at the present: only what comes next", async () => {
    const team = await env().team("dan");
    await team.lead.send({ to: "dan", message: text("old") });
    const w = watch(team.lead, { fromNow: true });
    await watchersParked(env().app, 1);
    await team.lead.send({ to: "dan", message: text("new") });
    await w.until("the new message", (x) => x.events().length >= 1);
    expect(w.events().map(eventKey)).toEqual(["envelope dan#2"]);
    w.stop();
  });

  it("history_only sends what is kept, then ends the stream (resuming from a cursor too)", async () => {
    const team = await env().team("erin");
    await team.lead.send({ to: "erin", message: text("one") });
    await team.lead.send({ to: "erin", message: text("two") });
    const cursors: string[] = [];
    const keys: string[] = [];
    for await (const res of team.lead.watchTeam({ historyOnly: true })) {
      if (res.kind.case !== "event") continue;
      cursors.push(res.cursor);
      keys.push(eventKey(res.kind.value));
    }
    expect(keys.filter((k) => k.startsWith("envelope"))).toEqual([
      "envelope erin#1",
      "envelope erin#2",
    ]);
    // From the first message's cursor: the rest, then the end.
    const rest: string[] = [];
    const at = cursors[keys.indexOf("envelope erin#1")] ?? "";
    for await (const res of team.lead.watchTeam({ cursor: at, historyOnly: true }))
      if (res.kind.case === "event") rest.push(eventKey(res.kind.value));
    expect(rest).toEqual(["envelope erin#2"]);
  });
});

describeEachDatabase(
  "WatchTeam: heartbeats",
  (env) => {
    it("sends heartbeats while the team is idle, with a cursor that resumes exactly there", async () => {
      const team = await env().team("eve");
      await team.lead.send({ to: "eve", message: text("before") });
      const w = watch(team.lead);
      await w.until("a heartbeat after the backlog", (x) =>
        x.responses.some((r) => r.kind.case === "heartbeat"),
      );
      const beat = w.responses.find((r) => r.kind.case === "heartbeat");
      expect(w.events().map(eventKey).slice(-1)).toEqual(["envelope eve#1"]);
      expect(beat?.cursor).toMatch(/^[0-9]+:[0-9]+:[0-9,]*$/); // settled: one snapshot
      w.stop();
      await team.lead.send({ to: "eve", message: text("after") });
      const resumed = watch(team.lead, { cursor: beat?.cursor ?? "" });
      await resumed.until("the message after the heartbeat", (x) => x.events().length >= 1);
      expect(resumed.events().map(eventKey)).toEqual(["envelope eve#2"]);
      resumed.stop();
    });
  },
  { heartbeatIntervalMs: 100 },
);

describeEachDatabase("client watch(): the feed across broken streams", (env) => {
  it("reconnects after the stream ends and resumes from its cursor: each event once", async () => {
    const team = await env().team("fay");
    await team.lead.send({ to: "fay", message: text("one") });
    const lead = createTeamClient({ baseUrl: env().server.url, token: team.leadToken });
    const statuses: string[] = [];
    const feed = lead.watch({
      backoff: { initialMs: 1, maxMs: 5 },
      onStatus: (s) => statuses.push(s.state),
    });
    const seen: TeamEvent[] = [];
    for await (const event of feed) {
      seen.push(event);
      if (seen.length === 3) {
        // The server ends every feed stream (as a graceful stop does) while events keep coming.
        await watchersParked(env().app, 1);
        env().app.teams.endAll();
        await team.lead.send({ to: "fay", message: text("two") });
      }
      if (envelopes(seen).length === 2) break;
    }
    expect(feed.connects).toBe(2);
    expect(statuses).toContain("disconnected");
    expect(seen.map(eventKey)).toEqual([
      expect.stringMatching(/^member team-lead /),
      expect.stringMatching(/^member fay /),
      "envelope fay#1",
      "envelope fay#2",
    ]);
  });
});
