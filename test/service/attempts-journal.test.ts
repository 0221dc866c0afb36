import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { AttemptOutcome, TaskStatus } from "../../gen/team/v1/enums_pb.js";
import type { Attempt } from "../../gen/team/v1/records_pb.js";
import type { TeamClient } from "../support/harness.js";
import { describeEachDatabase, raceTitle } from "../support/harness.js";
import {
  planRequest,
  planResponse,
  refused,
  shutdownRequest,
  shutdownResponse,
  text,
} from "../support/protocol-helpers.js";

const { ACCEPTED, REFUSED } = AttemptOutcome;

/** Every attempt `client` may see with `filter`, newest first, through all pages. */
async function journal(
  client: TeamClient,
  filter: { member?: string; outcome?: AttemptOutcome; requestId?: string } = {},
  pageSize = 500,
): Promise<Attempt[]> {
  const all: Attempt[] = [];
  let pageToken = "";
  do {
    const page = await client.listAttempts({ ...filter, pageSize, pageToken });
    all.push(...page.attempts);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return all;
}

/** The fields that say what happened, oldest first (the journal lists newest first). */
const story = (attempts: Attempt[]) =>
  attempts
    .map((a) => ({
      member: a.member,
      action: a.action,
      to: a.to,
      requestId: a.requestId,
      outcome: a.outcome,
      rule: a.rule,
      code: a.code,
    }))
    .reverse();

const accepted = (member: string, action: string, to: string, requestId = "") => ({
  member,
  action,
  to,
  requestId,
  outcome: ACCEPTED,
  rule: "",
  code: "",
});

describeEachDatabase("the protocol journal (ListAttempts)", (env, kind) => {
  it("journals every accepted protocol step with its request; text and replays are no attempts", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;

    await t.lead.send({ to: "alice", message: text("conversation is not protocol") });
    await alice.send({ to: "*", message: text("nor is a broadcast text") });
    const shutdown = (await t.lead.send({ to: "bob", message: shutdownRequest("wrap up") }))
      .requestId;
    await bob.send({ to: "team-lead", message: shutdownResponse(shutdown, false, "mid-task") });
    const plan = (await alice.send({ to: "team-lead", message: planRequest("p1") })).requestId;
    // A retry with the same message_id replays the first result: one attempt, not two.
    const answer = { to: "alice", message: planResponse(plan, true), messageId: "answer-1" };
    await t.lead.send(answer);
    expect((await t.lead.send(answer)).replayed).toBe(true);
    await alice.send({
      to: "team-lead",
      message: {
        kind: {
          case: "taskNotification",
          value: { taskId: "t1", status: TaskStatus.COMPLETED, description: "d" },
        },
      },
    });
    const withdrawn = (await alice.send({ to: "team-lead", message: planRequest("p2") })).requestId;
    await alice.cancelRequest({ requestId: withdrawn });

    const all = await journal(t.lead);
    expect(story(all)).toEqual([
      accepted("team-lead", "shutdown_request", "bob", shutdown),
      accepted("bob", "shutdown_response", "team-lead", shutdown),
      accepted("alice", "plan_approval_request", "team-lead", plan),
      accepted("team-lead", "plan_approval_response", "alice", plan),
      accepted("alice", "task_notification", "team-lead"),
      accepted("alice", "plan_approval_request", "team-lead", withdrawn),
      accepted("alice", "cancel_request", "", withdrawn),
    ]);
    for (const a of all) {
      expect(a.team).toBe(t.name);
      expect(a.message).toBe("");
      expect(a.at).toBeDefined();
    }
    // Ids increase with time: newest first means strictly decreasing ids.
    const ids = all.map((a) => a.id);
    expect([...ids].sort((x, y) => (x > y ? -1 : x < y ? 1 : 0))).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("journals refusals with rule, code and message, whichever layer refused", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const shutdown = (await t.lead.send({ to: "bob", message: shutdownRequest() })).requestId;

    // A stateless rule (the rules interceptor)...
    const notLead = await refused(() => alice.send({ to: "bob", message: shutdownRequest() }));
    // ...a stateful one, inside the store's rolled-back transaction...
    const unknown = await refused(() =>
      bob.send({ to: "team-lead", message: shutdownResponse("req_AAAAAAAAAAAAAAAAAAAAAA", true) }),
    );
    await bob.send({ to: "team-lead", message: shutdownResponse(shutdown, false, "busy") });
    const twice = await refused(() =>
      bob.send({ to: "team-lead", message: shutdownResponse(shutdown, false, "still busy") }),
    );
    // ...a refusal that is no protocol rule (a message_id reused for another message)...
    await alice.send({ to: "team-lead", message: planRequest("a"), messageId: "k" });
    const reused = await refused(() =>
      alice.send({ to: "team-lead", message: planRequest("b"), messageId: "k" }),
    );
    // ...and a cancel of someone else's request.
    const notMine = await refused(() => alice.cancelRequest({ requestId: shutdown }));

    const refusals = await journal(t.lead, { outcome: REFUSED });
    expect(story(refusals).map((a) => [a.member, a.action, a.requestId, a.rule, a.code])).toEqual([
      ["alice", "shutdown_request", "", "lead-only-shutdown", "permission_denied"],
      ["bob", "shutdown_response", "req_AAAAAAAAAAAAAAAAAAAAAA", "unknown-request", "not_found"],
      ["bob", "shutdown_response", shutdown, "once-only", "failed_precondition"],
      ["alice", "plan_approval_request", "", "", "already_exists"],
      ["alice", "cancel_request", shutdown, "requester-only", "permission_denied"],
    ]);
    // The message is what the caller was told, word for word.
    expect(
      [...refusals].reverse().map((a) => a.message),
      "messages as received",
    ).toEqual([notLead, unknown, twice, reused, notMine].map((r) => r.message));
    expect(notLead.code).toBe(Code.PermissionDenied);
    // Accepted ones are there too, and a filter by request shows one request's history.
    expect(story(await journal(t.lead, { requestId: shutdown }))).toEqual([
      accepted("team-lead", "shutdown_request", "bob", shutdown),
      accepted("bob", "shutdown_response", "team-lead", shutdown),
      expect.objectContaining({ member: "bob", outcome: REFUSED, rule: "once-only" }),
      expect.objectContaining({ member: "alice", outcome: REFUSED, rule: "requester-only" }),
    ]);
  });

  it("stores what a refused call carried capped, NUL included, and refuses it as before", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const garbage = `x\u0000${"y".repeat(10_000)}`;
    const r = await refused(() =>
      alice.send({ to: garbage, message: planResponse(garbage, true) }),
    );
    expect(r.code).toBe(Code.InvalidArgument);
    const [attempt] = await journal(t.lead, { outcome: REFUSED });
    expect(attempt).toMatchObject({ member: "alice", action: "plan_approval_response" });
    expect(attempt?.rule).toBe(r.detail?.rule);
    for (const field of [attempt?.to ?? "", attempt?.requestId ?? ""]) {
      expect(field.length).toBeLessThanOrEqual(128);
      expect(field.startsWith("x\\0yyy")).toBe(true);
      expect(field.endsWith("…")).toBe(true);
    }
    expect(attempt?.message.length).toBeLessThanOrEqual(1024);

    // Capped as PostgreSQL counts characters: a surrogate pair is kept whole, not mangled.
    const emoji = `${"x".repeat(126)}😀😀😀`;
    await refused(() => alice.send({ to: emoji, message: planResponse("req_typo", true) }));
    const [latest] = await journal(t.lead, { outcome: REFUSED });
    expect(latest?.to).toBe(`${"x".repeat(126)}😀…`);
    // A malformed request id that a refusal kept can be looked up as it was written.
    expect((await journal(t.lead, { requestId: "req_typo" })).map((a) => a.id)).toEqual([
      latest?.id,
    ]);
  });

  it(
    raceTitle(
      kind,
      "50 racing answers to one request: one accepted attempt, 49 refused, as the callers were told",
    ),
    async () => {
      const t = await env().team("alice");
      const plan = (
        await t.member("alice").client.send({ to: "team-lead", message: planRequest("p") })
      ).requestId;
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          t.lead
            .send({ to: "alice", message: planResponse(plan, i % 2 === 0, `answer ${i}`) })
            .then(
              () => "won",
              (e) => ConnectError.from(e).code,
            ),
        ),
      );
      expect(outcomes.filter((o) => o === "won")).toHaveLength(1);
      const answers = (await journal(t.lead, { requestId: plan })).filter(
        (a) => a.action === "plan_approval_response",
      );
      expect(answers.filter((a) => a.outcome === ACCEPTED)).toHaveLength(1);
      const lost = answers.filter((a) => a.outcome === REFUSED);
      expect(lost).toHaveLength(49);
      for (const a of lost) expect([a.rule, a.code]).toEqual(["once-only", "failed_precondition"]);
    },
  );

  it("the lead sees the team's journal, a teammate its own; filters narrow; pages add up", async () => {
    const t = await env().team("alice", "bob");
    const other = await env().team("carol");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    for (let i = 0; i < 3; i++) {
      await alice.send({ to: "team-lead", message: planRequest(`a${i}`) });
      await bob.send({ to: "team-lead", message: planRequest(`b${i}`) });
      await refused(() => bob.send({ to: "alice", message: planRequest("to a teammate") }));
    }
    await other.member("carol").client.send({ to: "team-lead", message: planRequest("c") });

    const all = await journal(t.lead);
    expect(all).toHaveLength(9);
    expect(new Set(all.map((a) => a.team))).toEqual(new Set([t.name]));
    // Pages of 2 give the same list, in the same order, none twice.
    expect((await journal(t.lead, {}, 2)).map((a) => a.id)).toEqual(all.map((a) => a.id));

    expect((await journal(alice)).map((a) => a.member)).toEqual(["alice", "alice", "alice"]);
    expect(await journal(bob, { member: "bob", outcome: REFUSED })).toHaveLength(3);
    expect((await journal(t.lead, { member: "bob" })).every((a) => a.member === "bob")).toBe(true);
    expect(await journal(t.lead, { member: "bob" })).toHaveLength(6);

    const peek = await refused(() => alice.listAttempts({ member: "bob" }));
    expect(peek.code).toBe(Code.PermissionDenied);
    expect((await refused(() => t.lead.listAttempts({ member: "carol" }))).code).toBe(
      Code.NotFound,
    );
    expect((await refused(() => t.lead.listAttempts({ pageToken: "x" }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await refused(() => t.lead.listAttempts({ outcome: 7 as AttemptOutcome }))).code).toBe(
      Code.InvalidArgument,
    );
    expect(await journal(other.lead)).toHaveLength(1);
  });

  it("is append-only: the database refuses to change, delete or truncate an attempt", async () => {
    const t = await env().team("alice");
    await refused(() => t.member("alice").client.send({ to: "*", message: planRequest("p") }));
    const [attempt] = await journal(t.lead);
    expect(attempt?.rule).toBe("no-broadcast");
    const id = attempt?.id ?? 0n;
    for (const sql of [
      "UPDATE protocol_attempts SET outcome = 'accepted', code = '' WHERE id = $1",
      "DELETE FROM protocol_attempts WHERE id = $1",
    ]) {
      await expect(env().db.query(sql, [id]), sql).rejects.toThrow(/append-only/);
    }
    await expect(env().db.query("TRUNCATE protocol_attempts")).rejects.toThrow(/append-only/);
    expect((await journal(t.lead))[0]).toEqual(attempt);
  });

  it("a refusal reaches the caller even when its journal line cannot be written", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const [team] = await env().db.query<{ id: number }>("SELECT id FROM teams WHERE name = $1", [
      t.name,
    ]);
    // This team's refused attempts no longer fit the table; nothing else changes.
    const constraint = `no_refusals_${team?.id}`;
    await env().db.query(
      `ALTER TABLE protocol_attempts ADD CONSTRAINT ${constraint}
       CHECK (outcome = 'accepted' OR team_id <> ${team?.id}) NOT VALID`,
    );
    try {
      const r = await refused(() => alice.send({ to: "alice", message: planRequest("p") }));
      expect([r.code, r.detail?.rule]).toEqual([Code.InvalidArgument, "plan-to-lead"]);
      // Accepted steps are unaffected (their line is part of their own transaction).
      await alice.send({ to: "team-lead", message: planRequest("p") });
    } finally {
      await env().db.query(`ALTER TABLE protocol_attempts DROP CONSTRAINT ${constraint}`);
    }
    expect(story(await journal(t.lead))).toEqual([
      accepted("alice", "plan_approval_request", "team-lead", expect.stringMatching(/^req_/)),
    ]);
  });

  it("calls without a valid token are nobody's attempts: nothing is journaled", async () => {
    const t = await env().team("alice");
    const plan = (
      await t.member("alice").client.send({ to: "team-lead", message: planRequest("p") })
    ).requestId;
    await t.lead.removeMember({ name: "alice" });
    const revoked = await refused(() =>
      t.member("alice").client.send({ to: "team-lead", message: planRequest("again") }),
    );
    expect(revoked.code).toBe(Code.Unauthenticated);
    const forged = await refused(() =>
      env()
        .client("not-a-token")
        .send({ to: "alice", message: planResponse(plan, true) }),
    );
    expect(forged.code).toBe(Code.Unauthenticated);
    expect(story(await journal(t.lead))).toEqual([
      accepted("alice", "plan_approval_request", "team-lead", plan),
    ]);
  });
});
