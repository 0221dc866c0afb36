import { expect, it } from "vitest";
import { parseConfig } from "../../server/config.js";
import { describeEachDatabase } from "../support/harness.js";
import {
  inbox,
  planRequest,
  planResponse,
  text as textMessage,
} from "../support/protocol-helpers.js";
import { watch } from "../support/team-watch.js";

const DAY = 86_400_000;

/** Makes rows look old: retention goes by the time they were stored. */
const age = (days: number) => new Date(Date.now() - days * DAY);

describeEachDatabase("retention", (env) => {
  it("deletes acked messages past the age and keeps unacked ones however old, and young ones", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const seqs: bigint[] = [];
    for (const text of ["old acked", "old unacked", "young"]) {
      const sent = await t.lead.send({
        to: "alice",
        message: textMessage(text),
      });
      seqs.push(sent.deliveries[0]?.seq ?? 0n);
    }
    await alice.ack({ seq: seqs[0] });
    await env().db.query(
      "UPDATE messages SET sent_at = $1 WHERE to_name = 'alice' AND seq = ANY($2::bigint[]) AND team_id = (SELECT id FROM teams WHERE name = $3)",
      [age(31), [seqs[0], seqs[1]], t.name],
    );
    const counts = await env().app.retention.runOnce();
    expect(counts.messages).toBeGreaterThanOrEqual(1);
    const left = await inbox(alice);
    expect(left.map((e) => e.message?.kind.value)).toEqual(["old unacked", "young"]);
  });

  it("deletes finished request records past the age, never a pending one", async () => {
    const t = await env().team("bob", "carol");
    const finished = await t
      .member("bob")
      .client.send({ to: "team-lead", message: planRequest("a") });
    await t.lead.send({
      to: "bob",
      message: planResponse(finished.requestId, true),
    });
    const pending = await t
      .member("carol")
      .client.send({ to: "team-lead", message: planRequest("b") });
    await env().db.query(
      "UPDATE requests SET created_at = $1::timestamptz, resolved_at = CASE WHEN status = 'pending' THEN NULL ELSE $1::timestamptz END, expires_at = $2 WHERE id = ANY($3::text[])",
      [age(40), new Date(Date.now() + DAY), [finished.requestId, pending.requestId]],
    );
    await env().app.retention.runOnce();
    await expect(t.lead.getRequest({ requestId: finished.requestId })).rejects.toThrow(
      /\[not_found\] no request/,
    );
    expect((await t.lead.getRequest({ requestId: pending.requestId })).request?.requestId).toBe(
      pending.requestId,
    );
  });

  it("deletes member events past the age; a feed from the start then begins with the kept ones, none missing", async () => {
    const t = await env().team("erin", "frank");
    const teamId = (
      await env().db.query<{ id: number }>("SELECT id FROM teams WHERE name = $1", [t.name])
    )[0]?.id;
    // The team's creation and both additions are old; frank's removal today is young.
    await env().db.query("UPDATE member_events SET at = $1 WHERE team_id = $2", [age(31), teamId]);
    await t.lead.removeMember({ name: "frank" });
    await t.lead.send({ to: "erin", message: textMessage("kept") });
    const counts = await env().app.retention.runOnce();
    expect(counts.memberEvents).toBeGreaterThanOrEqual(3);
    const left = await env().db.query<{ change: string }>(
      "SELECT change FROM member_events WHERE team_id = $1 ORDER BY feed_position",
      [teamId],
    );
    expect(left.map((r) => r.change)).toEqual(["removed"]);
    // From the empty cursor: what is kept, in order, nothing else and nothing missing.
    const w = watch(t.lead);
    await w.until("the kept events", (x) => x.events().length >= 2);
    w.stop();
    const seen = w
      .events()
      .map((e) =>
        e.change.case === "member"
          ? `member ${e.change.value.member?.name}`
          : `${e.change.case} ${e.change.case === "envelope" ? e.change.value.recipient : ""}`,
      );
    expect(seen).toEqual(["member frank", "envelope erin"]);
    // Members are read from their rows, not their events: ListMembers still shows everyone.
    const members = await t.lead.listMembers({});
    expect(members.members.map((m) => m.name).sort()).toEqual(["erin", "frank", "team-lead"]);
  });

  it("deletes task events past the age; the tasks stay as they are", async () => {
    const t = await env().team("gina");
    await t.lead.createTask({ taskId: "old", subject: "made long ago" });
    await t.lead.createTask({ taskId: "young", subject: "made today", blockedBy: ["old"] });
    const teamId = (
      await env().db.query<{ id: number }>("SELECT id FROM teams WHERE name = $1", [t.name])
    )[0]?.id;
    await env().db.query("UPDATE task_events SET at = $1 WHERE team_id = $2 AND task_id = 'old'", [
      age(31),
      teamId,
    ]);
    const counts = await env().app.retention.runOnce();
    expect(counts.taskEvents).toBeGreaterThanOrEqual(1);
    const left = await env().db.query<{ task_id: string }>(
      "SELECT task_id FROM task_events WHERE team_id = $1 ORDER BY feed_position",
      [teamId],
    );
    expect(left.map((r) => r.task_id)).toEqual(["young"]);
    expect((await t.lead.getTask({ taskId: "old" })).task?.blocks).toEqual(["young"]);
  });

  it("deletes journal lines past the age; every other DELETE, and any UPDATE, is still refused", async () => {
    const t = await env().team("dave");
    await t.member("dave").client.send({ to: "team-lead", message: planRequest("journaled") });
    const team = await env().db.query<{ id: number }>("SELECT id FROM teams WHERE name = $1", [
      t.name,
    ]);
    const teamId = team[0]?.id;
    const lead = await env().db.query<{ id: number }>(
      "SELECT id FROM members WHERE team_id = $1 AND role = 'lead'",
      [teamId],
    );
    // An old line, written as the journal writes (INSERT is the only change it allows).
    await env().db.query(
      "INSERT INTO protocol_attempts (team_id, member_id, at, action, outcome) VALUES ($1, $2, $3, 'cancel_request', 'accepted')",
      [teamId, lead[0]?.id, age(45)],
    );
    await expect(
      env().db.query("DELETE FROM protocol_attempts WHERE team_id = $1", [teamId]),
    ).rejects.toThrow(/append-only/);

    const counts = await env().app.retention.runOnce();
    expect(counts.attempts).toBeGreaterThanOrEqual(1);
    const left = await env().db.query<{ action: string }>(
      "SELECT action FROM protocol_attempts WHERE team_id = $1",
      [teamId],
    );
    expect(left.map((r) => r.action)).toEqual(["plan_approval_request"]);
    await expect(
      env().db.transaction(async (tx) => {
        await tx.query("SELECT set_config('team_protocols.retention', 'on', true)");
        await tx.query("UPDATE protocol_attempts SET action = 'x' WHERE team_id = $1", [teamId]);
      }),
    ).rejects.toThrow(/append-only/);
  });
});

it("retention defaults to 30 days for data and journal, checked hourly; 0 keeps everything", () => {
  const c = parseConfig([], {});
  expect([c.retentionDays, c.journalRetentionDays, c.retentionIntervalMs]).toEqual([
    30, 30, 3_600_000,
  ]);
  const keep = parseConfig([], { RETENTION_DAYS: "0", JOURNAL_RETENTION_DAYS: "0" });
  expect([keep.retentionDays, keep.journalRetentionDays]).toEqual([0, 0]);
});
