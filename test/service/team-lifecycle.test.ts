import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole, MemberStatus, PermissionMode } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import { shutdownRequest, shutdownResponse } from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";

const text = (t: string) => ({ kind: { case: "text" as const, value: t } });

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (err) => Code[ConnectError.from(err).code],
  );

describeEachDatabase("RotateToken", (env) => {
  it("replaces a member's own token: the old one is refused at once, its open stream ends Unauthenticated, mode and inbox kept", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice");
    await t.lead.send({ to: "alice", message: text("before the rotation") });
    const before = env().app.hub.waiting;
    const stream = alice.client.subscribe({ afterSeq: 1n });
    const ended = (async () => {
      try {
        for await (const _ of stream) {
        }
        return "ended cleanly";
      } catch (err) {
        return ConnectError.from(err);
      }
    })();
    await subscribedBeyond(env().app, before);
    const rotated = await alice.client.rotateToken({});
    expect(rotated.token).toMatch(/^tp_/);
    expect(rotated.token).not.toBe(alice.token);
    expect(rotated.member?.name).toBe("alice");
    const err = await ended;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    expect((err as ConnectError).rawMessage).toMatch(/token of "alice" was replaced/);
    expect(await codeOf(alice.client.listMembers({}))).toBe("Unauthenticated");
    const renewed = env().client(rotated.token);
    const inbox = await renewed.readInbox({ afterSeq: 0n });
    expect(inbox.envelopes.map((e) => e.message?.kind.value)).toEqual(["before the rotation"]);
    const me = (await renewed.listMembers({})).members.find((m) => m.name === "alice");
    expect(me?.status).toBe(MemberStatus.ACTIVE);
    expect(me?.permissionMode).toBe(PermissionMode.DEFAULT);
  });

  it("the lead replaces its own token and a teammate's; a teammate may not replace another's", async () => {
    const t = await env().team("alice", "bob");
    expect(await codeOf(t.member("alice").client.rotateToken({ member: "bob" }))).toBe(
      "PermissionDenied",
    );
    expect(await codeOf(t.member("bob").client.listMembers({}))).toBe("ok");
    const bob = await t.lead.rotateToken({ member: "bob" });
    expect(await codeOf(t.member("bob").client.listMembers({}))).toBe("Unauthenticated");
    expect(await codeOf(env().client(bob.token).listMembers({}))).toBe("ok");
    const lead = await t.lead.rotateToken({ member: "" });
    expect(lead.member?.name).toBe("team-lead");
    expect(await codeOf(t.lead.listMembers({}))).toBe("Unauthenticated");
    const renewed = env().client(lead.token);
    expect((await renewed.listMembers({})).you).toBe("team-lead");
  });

  it("an observer replaces its own token (observer-read-only lets it), not another's", async () => {
    const t = await env().team("alice");
    const added = await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
    const eye = env().client(added.token);
    expect(await codeOf(eye.rotateToken({ member: "alice" }))).toBe("PermissionDenied");
    const rotated = await eye.rotateToken({});
    expect(rotated.member?.name).toBe("eye");
    expect(await codeOf(env().client(rotated.token).listMembers({}))).toBe("ok");
  });

  it("refuses a stopped member, an unknown one and a malformed name", async () => {
    const t = await env().team("alice");
    await t.lead.removeMember({ name: "alice" });
    expect(await codeOf(t.lead.rotateToken({ member: "alice" }))).toBe("NotFound");
    expect(await codeOf(t.lead.rotateToken({ member: "nobody" }))).toBe("NotFound");
    const bad = await t.lead
      .rotateToken({ member: "no spaces" })
      .catch((e) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    expect((bad as ConnectError).rawMessage).toMatch(/size-shape.*member/);
  });
});

describeEachDatabase("DeleteTeam", (env) => {
  it("the lead deletes its team: every row gone, every token refused, open streams end, the name free again", async () => {
    const t = await env().team("alice");
    await t.lead.send({ to: "alice", message: text("soon gone") });
    await t.lead.createTask({ taskId: "t1", subject: "gone too" });
    await t.member("alice").client.send({ to: "team-lead", message: text("ok") });
    const before = env().app.hub.waiting;
    const ended = (async () => {
      try {
        for await (const _ of t.member("alice").client.subscribe({ afterSeq: 1n })) {
        }
        return undefined;
      } catch (err) {
        return ConnectError.from(err);
      }
    })();
    await subscribedBeyond(env().app, before);
    expect(await codeOf(t.member("alice").client.deleteTeam({ team: t.name }))).toBe(
      "PermissionDenied",
    );
    const other = await t.lead
      .deleteTeam({ team: "not-this-one" })
      .catch((e) => ConnectError.from(e));
    expect((other as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((other as ConnectError).rawMessage).toMatch(/repeat this team's name/);
    const res = await t.lead.deleteTeam({ team: t.name });
    expect(res.membersRemoved).toBe(2);
    expect((await ended)?.code).toBe(Code.Unauthenticated);
    expect(await codeOf(t.lead.listMembers({}))).toBe("Unauthenticated");
    expect(await codeOf(t.member("alice").client.readInbox({}))).toBe("Unauthenticated");
    const [row] = await env().db.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM teams WHERE name = $1",
      [t.name],
    );
    expect(row?.n).toBe("0");
    const again = await env().client().createTeam({ team: t.name });
    expect(again.token).toMatch(/^tp_/);
  });

  it("deletes a team whose journal has lines: the append-only journal lets the team's own deletion through, and no other team's line goes", async () => {
    const t = await env().team("alice");
    const keep = await env().team("bob");
    for (const team of [t, keep]) {
      const mate = team === t ? "alice" : "bob";
      const asked = await team.lead.send({ to: mate, message: shutdownRequest("done") });
      await team.member(mate).client.send({
        to: "team-lead",
        message: shutdownResponse(asked.requestId, false, "busy"),
      });
    }
    const journal = async (name: string) =>
      (
        await env().db.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM protocol_attempts a JOIN teams x ON x.id = a.team_id
           WHERE x.name = $1`,
          [name],
        )
      )[0]?.n;
    expect(Number(await journal(t.name))).toBeGreaterThan(0);
    const kept = await journal(keep.name);
    expect(Number(kept)).toBeGreaterThan(0);
    expect((await t.lead.deleteTeam({ team: t.name })).membersRemoved).toBe(2);
    const [row] = await env().db.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM protocol_attempts WHERE team_id NOT IN (SELECT id FROM teams)",
    );
    expect(row?.n).toBe("0");
    expect(await journal(keep.name)).toBe(kept);
    // The journal is still append-only outside a team's deletion.
    await expect(env().db.query("DELETE FROM protocol_attempts")).rejects.toThrow();
  });
});
