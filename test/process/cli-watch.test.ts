import { expect, it } from "vitest";
import { runTeam, spawnTeam } from "../support/cli.js";
import { describeEachDatabase } from "../support/harness.js";
import { planRequest, text } from "../support/protocol-helpers.js";
import { watchersParked } from "../support/team-watch.js";

interface WatchLine {
  cursor: string;
  event: {
    position: string;
    envelope?: { recipient: string; envelope: { seq: string; from: string; message: unknown } };
    request?: { request: { requestId: string; status: string } };
    member?: { change: string; member: { name: string; role: string } };
  };
}

const lines = (stdout: string): WatchLine[] =>
  stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as WatchLine);

/** `team watch` and `team add-member --observer` as child processes against a real server. */
describeEachDatabase("team watch (CLI)", (env) => {
  const as = (token: string) => ({ TEAM_URL: env().server.url, TEAM_TOKEN: token });

  it("--json prints one event per line with its cursor; --since resumes exactly after one", async () => {
    const team = await env().team("alice");
    const alice = team.member("alice").client;
    await team.lead.send({ to: "alice", message: text("hello") });
    const asked = await alice.send({ to: "team-lead", message: planRequest("1. plan") });
    const all = await runTeam(["watch", "--json", "--count", "5"], as(team.leadToken));
    expect(all.code, all.stderr).toBe(0);
    const feed = lines(all.stdout);
    expect(
      feed.map(({ event: e }) =>
        e.member
          ? `member ${e.member.member.name} ${e.member.change} ${e.member.member.role}`
          : e.envelope
            ? `envelope ${e.envelope.recipient}#${e.envelope.envelope.seq} from ${e.envelope.envelope.from}`
            : `request ${e.request?.request.requestId} ${e.request?.request.status}`,
      ),
    ).toEqual([
      "member team-lead MEMBER_CHANGE_ADDED MEMBER_ROLE_LEAD",
      "member alice MEMBER_CHANGE_ADDED MEMBER_ROLE_TEAMMATE",
      "envelope alice#1 from team-lead",
      "envelope team-lead#1 from alice",
      `request ${asked.requestId} REQUEST_STATUS_PENDING`,
    ]);
    const rest = await runTeam(
      ["watch", "--json", "--count", "2", "--since", feed[2]?.cursor ?? ""],
      as(team.leadToken),
    );
    expect(rest.code, rest.stderr).toBe(0);
    expect(lines(rest.stdout).map((l) => l.event.position)).toEqual(
      feed.slice(3).map((l) => l.event.position),
    );
  });

  it("an observer added with --observer tails the team live, one plain line per event", async () => {
    const team = await env().team("bob");
    const added = await runTeam(["add-member", "eye", "--observer", "--json"], as(team.leadToken));
    expect(added.code, added.stderr).toBe(0);
    const { token, member } = JSON.parse(added.stdout) as {
      token: string;
      member: { role: string };
    };
    expect(member.role).toBe("MEMBER_ROLE_OBSERVER");
    const tail = spawnTeam(["watch", "--now", "--count", "1"], as(token));
    await watchersParked(env().app, 1);
    await team.member("bob").client.send({ to: "team-lead", message: text("done\nall green") });
    const out = await tail.done;
    expect(out.code, out.stderr).toBe(0);
    // Not a terminal: no colour codes.
    expect(out.stdout).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3}Z {2}bob → team-lead #1 {2}text: done\n {4}all green\n$/,
    );
  });

  it("a teammate's team watch is refused with the rule, exit code 1", async () => {
    const team = await env().team("carl");
    const out = await runTeam(["watch"], as(team.member("carl").token));
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/refused by rule watch-lead-or-observer \(permission_denied\)/);
  });
});
