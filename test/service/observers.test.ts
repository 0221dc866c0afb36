import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, type TeamClient, type TestTeam } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";
import { planRequest, refused, shutdownRequest, text } from "../support/protocol-helpers.js";
import { eventKey, watch, watchersParked } from "../support/team-watch.js";

describeEachDatabase("observers: read-only members", (env) => {
  /** A team with alice, an observer "eye", and a plan alice asked the lead to approve. */
  async function observedTeam(): Promise<{
    team: TestTeam;
    eye: TeamClient;
    alice: TeamClient;
    requestId: string;
  }> {
    const team = await env().team("alice");
    const added = await team.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
    expect(added.member?.role).toBe(MemberRole.OBSERVER);
    const alice = team.member("alice").client;
    const { requestId } = await alice.send({ to: "team-lead", message: planRequest("1. build") });
    return { team, eye: env().client(added.token), alice, requestId };
  }

  it("reads what the lead reads: members, requests, attempts, the feed", async () => {
    const { team, eye, requestId } = await observedTeam();
    const members = await eye.listMembers({});
    expect(members.you).toBe("eye");
    expect(members.members.map((m) => [m.name, m.role])).toEqual([
      ["team-lead", MemberRole.LEAD],
      ["alice", MemberRole.TEAMMATE],
      ["eye", MemberRole.OBSERVER],
    ]);
    // A request between alice and the lead: the observer is no party, and sees it.
    expect((await eye.getRequest({ requestId })).request?.from).toBe("alice");
    expect((await eye.listRequests({})).requests.map((r) => r.requestId)).toEqual([requestId]);
    expect(
      (await eye.awaitRequest({ requestId, timeout: { seconds: 0n, nanos: 1_000_000 } })).request
        ?.status,
    ).toBe(RequestStatus.PENDING);
    // The whole journal, and any member's part of it.
    expect((await eye.listAttempts({})).attempts.map((a) => a.member)).toEqual(["alice"]);
    expect((await eye.listAttempts({ member: "alice" })).attempts).toHaveLength(1);
    const w = watch(eye);
    await w.until("the plan's envelope", (x) =>
      x.events().some((e) => eventKey(e) === "envelope team-lead#1"),
    );
    w.stop();
    void team;
  });

  it("every write, and every inbox call, is refused with observer-read-only", async () => {
    const { eye, requestId } = await observedTeam();
    const calls: [string, () => Promise<unknown>][] = [
      ["Send", () => eye.send({ to: "team-lead", message: text("hello") })],
      ["Send *", () => eye.send({ to: "*", message: text("hello all") })],
      ["Send plan", () => eye.send({ to: "team-lead", message: planRequest("mine") })],
      ["Send keyed", () => eye.send({ to: "alice", message: text("x"), messageId: "k1" })],
      ["CancelRequest", () => eye.cancelRequest({ requestId })],
      ["AddMember", () => eye.addMember({ name: "sneaky" })],
      ["RemoveMember", () => eye.removeMember({ name: "alice" })],
      ["Ack", () => eye.ack({ seq: 0n })],
      ["ReadInbox", () => eye.readInbox({})],
      [
        "Subscribe",
        async () => {
          for await (const _ of eye.subscribe({})) break;
        },
      ],
    ];
    for (const [name, call] of calls) {
      const r = await refused(call);
      expect([name, r.code, r.detail?.rule]).toEqual([
        name,
        Code.PermissionDenied,
        "observer-read-only",
      ]);
      expect(r.message, name).toMatch(/^observer-read-only: /);
    }
    // Nothing was stored by any of them.
    const [row] = await env().db.query<{ n: bigint }>(
      `SELECT count(*) AS n FROM members WHERE name = 'sneaky'`,
    );
    expect(row?.n).toBe(0n);
  });

  it("cannot be addressed, on either send path, nor asked to shut down", async () => {
    const { team } = await observedTeam();
    const sends: [string, () => Promise<unknown>][] = [
      // Plain text goes through the group-commit batch; a message_id takes a transaction.
      ["batched", () => team.lead.send({ to: "eye", message: text("hi") })],
      ["keyed", () => team.lead.send({ to: "eye", message: text("hi"), messageId: "m-1" })],
      ["shutdown", () => team.lead.send({ to: "eye", message: shutdownRequest("bye") })],
      ["teammate", () => team.member("alice").client.send({ to: "eye", message: text("psst") })],
    ];
    for (const [name, send] of sends) {
      const r = await refused(send);
      expect([name, r.code, r.detail?.rule, r.detail?.field]).toEqual([
        name,
        Code.InvalidArgument,
        "observer-not-addressable",
        "to",
      ]);
    }
  });

  it("is not counted in broadcasts and never receives a message", async () => {
    const { team } = await observedTeam();
    const sent = await team.lead.send({ to: "*", message: text("standup") });
    expect(sent.deliveries.map((d) => d.to)).toEqual(["alice"]);
    const keyed = await team.lead.send({ to: "*", message: text("again"), messageId: "b-1" });
    expect(keyed.deliveries.map((d) => d.to)).toEqual(["alice"]);
    const [row] = await env().db.query<{ n: bigint }>(
      `SELECT count(*) AS n FROM messages m JOIN members r ON r.id = m.recipient_id
       JOIN teams t ON t.id = r.team_id WHERE r.name = 'eye' AND t.name = $1`,
      [team.name],
    );
    expect(row?.n).toBe(0n);
  });

  it("the lead cannot add a second lead; removing an observer ends its feed and its token", async () => {
    const { team, eye } = await observedTeam();
    const second = await refused(() =>
      team.lead.addMember({ name: "boss", role: MemberRole.LEAD }),
    );
    expect(second.code).toBe(Code.InvalidArgument);
    expect(second.message).toMatch(/one lead/);
    const w = watch(eye, { fromNow: true });
    await watchersParked(env().app, 1);
    await team.lead.removeMember({ name: "eye" });
    const ended = await w.ended;
    expect(ended?.code).toBe(Code.Unauthenticated);
    expect((await refused(() => eye.listMembers({}))).code).toBe(Code.Unauthenticated);
  });

  it("over MCP, an observer is shown the reading tools only; a write is refused by the server", async () => {
    const { team } = await observedTeam();
    const added = await team.lead.addMember({ name: "eye2", role: MemberRole.OBSERVER });
    const mcp = await connectMcp("http", env().server.url, added.token);
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual([
      "list_members",
      "whoami",
      "get_request",
      "list_requests",
      "await_request",
      "get_task",
      "list_tasks",
      "list_leases",
      "search_messages",
      "get_thread",
      "journal",
    ]);
    const sent = await callTool(mcp, "send_message", {
      to: "team-lead",
      message: "hi",
    });
    expect(sent.isError).toBe(true);
    expect(sent.text).toMatch(/^observer-read-only/);
    await mcp.close();
  });
});
