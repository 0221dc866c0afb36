import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProgram } from "../../client/cli/main.js";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import {
  type CliResult,
  inBatches,
  runTeam,
  type ServeProcess,
  spawnTeam,
  startTeamServe,
} from "../support/cli.js";
import { uniqueName } from "../support/harness.js";

/**
 * The `team` CLI as people and scripts use it: each command a child process against a real
 * server that `team serve` runs, judged by exit code, stdout and stderr. Setup that is not
 * under test goes through the client library, which is faster than a process per step.
 */

let dir: string;
let serve: ServeProcess;
let url: string;

beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), "tp-cli-"));
  // Flags, not environment: `serve` hands them to the server's own parser.
  // A deadline, not a figure: the embedded database starts slowly on a loaded machine.
  serve = await startTeamServe(["--port", "0", "--data-dir", join(dir, "data")], 120_000);
  url = serve.url;
}, 150_000);

afterAll(async () => {
  const stopped = serve ? await serve.stop() : undefined;
  await rm(dir, { recursive: true, force: true });
  // A graceful stop: SIGTERM ends `team serve` with exit code 0.
  if (stopped) expect(stopped.code, stopped.stderr).toBe(0);
});

const as = (token: string): Record<string, string> => ({ TEAM_URL: url, TEAM_TOKEN: token });

/** A team made with the library: the lead's client and token, and teammates' tokens. */
async function team(teammates: string[], leadMode?: "plan") {
  const anon = createTeamClient({ baseUrl: url });
  const created = await anon.createTeam(
    uniqueName("cli"),
    leadMode ? { leadPermissionMode: leadMode } : {},
  );
  const lead = anon.withToken(created.token);
  const tokens: Record<string, string> = { "team-lead": created.token };
  for (const name of teammates) tokens[name] = (await lead.addMember(name)).token;
  const client = (name: string): TeamClient => anon.withToken(tokens[name] ?? "");
  return { lead, tokens, client, env: (name: string) => as(tokens[name] ?? "") };
}

function ok(result: CliResult): CliResult {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
  return result;
}

const json = (result: CliResult) => JSON.parse(ok(result).stdout);
const requestIdIn = (text: string) => /request (req_[A-Za-z0-9_-]{22})/.exec(text)?.[1] ?? "";

describe("the team CLI", () => {
  it("answers --help on every command, and lists every command", async () => {
    const names = createProgram().commands.map((c) => c.name());
    expect(names).toEqual(
      expect.arrayContaining([
        "serve",
        "create-team",
        "add-member",
        "remove-member",
        "members",
        "send",
        "broadcast",
        "inbox",
        "shutdown",
        "answer-shutdown",
        "submit-plan",
        "approve",
        "reject",
        "notify-task",
        "task",
        "requests",
        "request",
        "await",
        "cancel",
        "attempts",
        "answer",
        "whoami",
        "rotate-token",
        "delete-team",
        "export",
        "verify",
        "import",
        "up",
        "status",
        "down",
      ]),
    );
    const helps = await inBatches(names, 4, (name) => runTeam([name, "--help"]));
    helps.forEach((help, i) => {
      ok(help);
      // serve's help is the server's own: its flags, parsed by server/config.ts.
      expect(help.stdout).toContain(`Usage: team ${names[i]} `);
    });
    // A default is shown the way the flag is written.
    expect(helps[names.indexOf("await")]?.stdout).toContain("(default: 60s)");
    const top = ok(await runTeam(["--help"]));
    for (const name of names) expect(top.stdout).toContain(`  ${name} `);
    expect(top.stdout).toContain("Exit codes");
    const unknown = await runTeam(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command");
    // A deadline, not a figure: one process per command, a few at a time, on a shared machine.
  }, 240_000);

  it("create-team, add-member, members, remove-member: tokens that work, text and JSON", async () => {
    const name = uniqueName("made-by-cli");
    const created = ok(await runTeam(["create-team", name], { TEAM_URL: url }));
    const leadToken = /lead token \(shown only once\): (tp_\S+)/.exec(created.stdout)?.[1] ?? "";
    expect(created.stdout).toContain(`created team "${name}" with lead "team-lead"`);
    const asLead = as(leadToken);

    const planned = json(
      await runTeam(["create-team", uniqueName("planned"), "--lead-mode", "plan", "--json"], {
        TEAM_URL: url,
      }),
    );
    expect(planned.token).toMatch(/^tp_/);
    expect(planned.lead).toMatchObject({
      name: "team-lead",
      permissionMode: "PERMISSION_MODE_PLAN",
    });

    // A teammate starts in the lead's mode, or in the one --mode names.
    const asPlanner = as(planned.token);
    const carol = json(await runTeam(["add-member", "carol", "--json"], asPlanner));
    expect(carol.member).toMatchObject({ permissionMode: "PERMISSION_MODE_PLAN" });
    const dave = json(
      await runTeam(["add-member", "dave", "--mode", "default", "--json"], asPlanner),
    );
    expect(dave.member).toMatchObject({ permissionMode: "PERMISSION_MODE_DEFAULT" });

    const alice = ok(await runTeam(["add-member", "alice"], asLead));
    const aliceToken = /token \(shown only once\): (tp_\S+)/.exec(alice.stdout)?.[1] ?? "";
    const bob = json(await runTeam(["add-member", "bob", "--json"], asLead));
    expect(bob.member).toMatchObject({ name: "bob", role: "MEMBER_ROLE_TEAMMATE" });
    // The printed tokens are real: each member can call with its own.
    expect(await createTeamClient({ baseUrl: url, token: aliceToken }).leadName()).toBe(
      "team-lead",
    );

    const table = ok(await runTeam(["members"], as(bob.token)));
    expect(table.stdout.split("\n")[0]).toMatch(
      /^NAME\s+ROLE\s+STATUS\s+MODE\s+PRESENCE\s+LAST SEEN\s+VIA$/,
    );
    expect(table.stdout).toMatch(/\nalice\s+teammate\s+active\s+default\s+/);
    expect(table.stdout).toMatch(/\nbob \(you\)\s+teammate\s+active\s+/);
    const listed = json(await runTeam(["members", "--json"], asLead));
    expect(listed.members.map((m: { name: string }) => m.name)).toEqual([
      "team-lead",
      "alice",
      "bob",
    ]);

    expect(ok(await runTeam(["remove-member", "bob"], asLead)).stdout).toBe(
      'removed "bob" (now stopped)\n',
    );
    const removed = json(await runTeam(["remove-member", "alice", "--json"], asLead));
    expect(removed.member).toMatchObject({ name: "alice", status: "MEMBER_STATUS_STOPPED" });

    const again = await runTeam(["create-team", name], { TEAM_URL: url });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^team: already_exists: /);
  }, 60_000);

  it("send, broadcast and inbox (--after, --limit, --ack, --prompt, --json)", async () => {
    const t = await team(["alice", "bob"]);
    expect(ok(await runTeam(["send", "alice", "hello", "world"], t.env("team-lead"))).stdout).toBe(
      "sent to alice (seq 1)\n",
    );
    const keyed = ["send", "alice", "again", "--message-id", "m-1", "--json"];
    const first = json(await runTeam(keyed, t.env("team-lead")));
    expect(first).toMatchObject({
      seq: "2",
      replayed: false,
      deliveries: [{ to: "alice", seq: "2" }],
    });
    expect(json(await runTeam(keyed, t.env("team-lead")))).toMatchObject({
      seq: "2",
      replayed: true,
    });
    const all = json(await runTeam(["broadcast", "all", "hands", "--json"], t.env("team-lead")));
    expect(all.deliveries).toEqual([
      { to: "alice", seq: "3" },
      { to: "bob", seq: "1" },
    ]);

    const read = ok(await runTeam(["inbox"], t.env("alice"))).stdout.split("\n");
    expect(read[0]).toMatch(/^#1 \d\d:\d\d:\d\d\.\d{3}Z team-lead → alice {2}text: hello world$/);
    expect(read[2]).toMatch(/^#3 .* team-lead → \* {2}text: all hands$/);
    expect(read[3]).toBe("(3 messages; acked through seq 0; last seq 3)");
    const page = json(
      await runTeam(["inbox", "--after", "1", "--limit", "1", "--json"], t.env("alice")),
    );
    expect(page.envelopes.map((e: { seq: string }) => e.seq)).toEqual(["2"]);
    expect(page.envelopes[0]).toMatchObject({ from: "team-lead", message: { text: "again" } });
    const prompt = ok(await runTeam(["inbox", "--prompt"], t.env("alice"))).stdout;
    expect(prompt).toMatch(
      /^<message from="team-lead" to="alice" seq="1" sent_at="[^"]+" id="env_[^"]+">\nhello world\n<\/message>/,
    );

    expect(ok(await runTeam(["inbox", "--ack"], t.env("alice"))).stdout).toContain(
      "(3 messages; acked through seq 3; last seq 3)",
    );
    expect(ok(await runTeam(["inbox"], t.env("alice"))).stdout).toBe(
      "(0 messages; acked through seq 3; last seq 3)\n",
    );
    expect(ok(await runTeam(["broadcast", "stand", "up"], t.env("bob"))).stdout).toBe(
      "sent to team-lead (seq 1), alice (seq 4)\n",
    );
  }, 60_000);

  it("inbox --follow streams backlog and live messages, acks with --ack, stops at --count or Ctrl-C", async () => {
    const t = await team(["alice"]);
    await t.lead.sendText("alice", "before");
    const follow = spawnTeam(
      ["inbox", "--follow", "--ack", "--count", "3", "--json"],
      t.env("alice"),
    );
    await waitUntil(() => follow.stdout().includes('"before"'));
    await t.lead.sendText("alice", "live 1");
    await t.lead.sendText("alice", "live 2");
    const done = ok(await follow.done);
    const lines = done.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((e) => [e.seq, e.message.text])).toEqual([
      ["1", "before"],
      ["2", "live 1"],
      ["3", "live 2"],
    ]);
    expect((await t.client("alice").readInbox()).ackedSeq).toBe(3n);

    const human = spawnTeam(["inbox", "--follow"], t.env("alice"));
    await t.lead.sendText("alice", "one more");
    await waitUntil(() => human.stdout().includes("text: one more"));
    human.child.kill("SIGINT");
    const stopped = ok(await human.done);
    expect(stopped.stdout).toMatch(/^#4 .* team-lead → alice {2}text: one more\n$/);
    // Without --ack nothing was acked.
    expect((await t.client("alice").readInbox()).ackedSeq).toBe(3n);
  }, 60_000);

  it("shutdown, answer-shutdown, request, requests, await: refusals exit 1 naming the rule", async () => {
    const t = await team(["alice"]);
    const asked = ok(
      await runTeam(
        ["shutdown", "alice", "--reason", "work is done", "--ttl", "5m"],
        t.env("team-lead"),
      ),
    );
    const id = requestIdIn(asked.stdout);
    expect(asked.stdout).toBe(`sent to alice (seq 1); request ${id}\n`);

    const blank = await runTeam(["answer-shutdown", id, "--reject"], t.env("alice"));
    expect(blank).toMatchObject({ code: 1, stdout: "" });
    expect(blank.stderr).toBe(
      "team: refused by rule reason-on-reject (invalid_argument): reason is required when rejecting a shutdown request\n",
    );
    const blankJson = await runTeam(["answer-shutdown", id, "--reject", "--json"], t.env("alice"));
    expect(blankJson.code).toBe(1);
    expect(JSON.parse(blankJson.stderr).error).toMatchObject({
      code: "invalid_argument",
      rule: "reason-on-reject",
      sentence: "reason is required when rejecting a shutdown request",
    });
    const both = await runTeam(["answer-shutdown", id, "--approve", "--reject"], t.env("alice"));
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("exactly one of --approve and --reject");

    const rejected = ["answer-shutdown", id, "--reject", "--reason", "still testing", "--json"];
    expect(json(await runTeam(rejected, t.env("alice")))).toMatchObject({ requestId: id });
    const twice = await runTeam(rejected, t.env("alice"));
    expect(twice.code).toBe(1);
    expect(JSON.parse(twice.stderr).error).toMatchObject({
      code: "failed_precondition",
      rule: "once-only",
    });

    const shown = ok(await runTeam(["request", id], t.env("team-lead"))).stdout;
    expect(shown).toMatch(/^request {2}req_/);
    expect(shown).toContain("status   rejected\n");
    expect(shown).toContain("answer   shutdown_response");
    const record = json(await runTeam(["request", id, "--json"], t.env("alice")));
    expect(record).toMatchObject({
      status: "REQUEST_STATUS_REJECTED",
      response: { shutdownResponse: { approve: false, reason: "still testing" } },
    });

    const second = json(
      await runTeam(["shutdown", "alice", "--json"], t.env("team-lead")),
    ).requestId;
    const early = await runTeam(["await", second, "--timeout", "300ms"], t.env("team-lead"));
    expect(early.code).toBe(3);
    expect(early.stdout).toContain("status   pending\n");
    const waiting = spawnTeam(["await", second, "--timeout", "30s", "--json"], t.env("team-lead"));
    // The one sleep left here, as no event exists: a `team await` child prints nothing while
    // it waits and the server runs in another process (no hook to read). It only makes a
    // parked wait likely; nothing asserted depends on it (an answer that came first is
    // returned at once, the same record). That the server parks and wakes AwaitRequest is
    // proved in-process (client, replicas: app.waiters).
    await new Promise((r) => setTimeout(r, 300));
    expect(ok(await runTeam(["answer-shutdown", second, "--approve"], t.env("alice"))).stdout).toBe(
      `sent to team-lead (seq 2); request ${second}\n`,
    );
    expect(json(await waiting.done)).toMatchObject({
      requestId: second,
      status: "REQUEST_STATUS_APPROVED",
    });

    const listed = ok(await runTeam(["requests"], t.env("team-lead"))).stdout.split("\n");
    expect(listed[0]).toMatch(/^REQUEST\s+KIND\s+FROM\s+TO\s+STATUS\s+CREATED$/);
    expect(listed[1]).toMatch(
      new RegExp(`^${second}\\s+shutdown\\s+team-lead\\s+alice\\s+approved\\s`),
    );
    expect(listed[2]).toMatch(
      new RegExp(`^${id}\\s+shutdown\\s+team-lead\\s+alice\\s+rejected\\s`),
    );
    const none = ok(await runTeam(["requests", "--status", "expired"], t.env("team-lead")));
    expect(none.stdout).toBe("no requests\n");
    const onlyRejected = json(
      await runTeam(["requests", "--status", "rejected", "--json"], t.env("team-lead")),
    );
    expect(onlyRejected.requests.map((r: { requestId: string }) => r.requestId)).toEqual([id]);
  }, 90_000);

  it("submit-plan (words, --file, stdin), approve, reject, cancel and notify-task", async () => {
    const t = await team(["alice"], "plan");
    const p1 = requestIdIn(
      ok(await runTeam(["submit-plan", "--", "rm", "-rf", "src/"], t.env("alice"))).stdout,
    );
    expect(
      ok(await runTeam(["reject", p1, "--feedback", "smaller steps"], t.env("team-lead"))).stdout,
    ).toBe(`sent to alice (seq 1); request ${p1}\n`);
    const file = join(dir, "plan.txt");
    await writeFile(file, "1. move src/ to trash/\n2. rewrite\n");
    const p2 = json(
      await runTeam(["submit-plan", "--file", file, "--json"], t.env("alice")),
    ).requestId;
    expect((await t.lead.getRequest(p2)).request?.kind).toMatchObject({
      value: { plan: "1. move src/ to trash/\n2. rewrite\n" },
    });
    const notLead = await runTeam(["approve", p2], t.env("alice"));
    expect(notLead.code).toBe(1);
    expect(notLead.stderr).toMatch(
      /^team: refused by rule lead-only-approval \(permission_denied\): /,
    );
    expect(ok(await runTeam(["approve", p2], t.env("team-lead"))).stdout).toBe(
      `sent to alice (seq 2); request ${p2}\n`,
    );
    const answers = json(await runTeam(["inbox", "--json"], t.env("alice"))).envelopes;
    expect(answers.map((e: { message: unknown }) => e.message)).toMatchObject([
      { planApprovalResponse: { requestId: p1, approve: false, feedback: "smaller steps" } },
      {
        planApprovalResponse: {
          requestId: p2,
          approve: true,
          permissionMode: "PERMISSION_MODE_DEFAULT",
        },
      },
    ]);

    const p3 = requestIdIn(
      ok(await runTeam(["submit-plan", "--file", "-"], t.env("alice"), "from stdin")).stdout,
    );
    expect((await t.lead.getRequest(p3)).request?.kind.value).toMatchObject({ plan: "from stdin" });
    expect(ok(await runTeam(["cancel", p3], t.env("alice"))).stdout).toContain(
      "status   canceled\n",
    );
    const late = await runTeam(["cancel", p3, "--json"], t.env("alice"));
    expect(late.code).toBe(1);
    expect(JSON.parse(late.stderr).error.rule).toBe("once-only");

    const p4 = requestIdIn(
      ok(await runTeam(["submit-plan", "try", "again"], t.env("alice"))).stdout,
    );
    const rejected = ["reject", p4, "--feedback", "not now", "--json"];
    expect(json(await runTeam(rejected, t.env("team-lead")))).toMatchObject({
      requestId: p4,
      replayed: false,
      deliveries: [{ to: "alice", seq: "3" }],
    });
    const p5 = requestIdIn(
      ok(await runTeam(["submit-plan", "last", "one"], t.env("alice"))).stdout,
    );
    expect(json(await runTeam(["approve", p5, "--json"], t.env("team-lead")))).toMatchObject({
      requestId: p5,
      deliveries: [{ to: "alice", seq: "4" }],
    });
    expect((await t.lead.getRequest(p4)).response?.kind.value).toMatchObject({
      approve: false,
      feedback: "not now",
    });

    const failed = [
      "notify-task",
      "t-1",
      "--status",
      "failed",
      "--description",
      "fix the parser",
      "--error",
      "tests red",
      "--tokens",
      "1200",
      "--tool-uses",
      "7",
      "--duration-ms",
      "5300",
    ];
    expect(ok(await runTeam(failed, t.env("alice"))).stdout).toMatch(
      /^sent to team-lead \(seq \d+\)\n$/,
    );
    const done = ["notify-task", "t-2", "--status", "completed", "--result", "all green", "--json"];
    expect(json(await runTeam(done, t.env("alice")))).toMatchObject({ requestId: "" });
    const missing = await runTeam(["notify-task", "t-3"], t.env("alice"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--status");
    const prompt = ok(await runTeam(["inbox", "--prompt"], t.env("team-lead"))).stdout;
    expect(prompt).toContain(
      [
        "<task-notification>",
        "<task-id>t-1</task-id>",
        "<status>failed</status>",
        '<summary>Agent "fix the parser" failed: tests red</summary>',
        "<usage>",
        "  <total_tokens>1200</total_tokens>",
        "  <tool_uses>7</tool_uses>",
        "  <duration_ms>5300</duration_ms>",
        "</usage>",
        "</task-notification>",
      ].join("\n"),
    );
    // Every plan in this backlog is settled by now: replayed, none asks for an answer.
    expect(prompt).toContain(`request_id="${p1}"`);
    expect(prompt).toContain("This request is no longer pending: it is rejected.");
    expect(prompt).not.toContain(`team approve ${p1}`);

    // The journal keeps what was tried, refusals included.
    const refusals = ok(await runTeam(["attempts", "--outcome", "refused"], t.env("team-lead")))
      .stdout.trimEnd()
      .split("\n");
    expect(refusals[0]).toMatch(/^AT\s+MEMBER\s+ACTION\s+TO\s+REQUEST\s+OUTCOME$/);
    expect(refusals.slice(1)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^\\S+Z\\s+alice\\s+cancel_request\\s+-\\s+${p3}\\s+refused: once-only \\(failed_precondition\\)$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^\\S+Z\\s+alice\\s+plan_approval_response\\s+alice\\s+${p2}\\s+refused: lead-only-approval \\(permission_denied\\)$`,
        ),
      ),
    ]);
    const history = json(await runTeam(["attempts", "--request", p2, "--json"], t.env("alice")));
    expect(
      history.attempts.map((a: { action: string; outcome: string }) => [a.action, a.outcome]),
    ).toEqual([
      ["plan_approval_response", "ATTEMPT_OUTCOME_REFUSED"],
      ["plan_approval_request", "ATTEMPT_OUTCOME_ACCEPTED"],
    ]);
    const peek = await runTeam(["attempts", "--member", "team-lead"], t.env("alice"));
    expect(peek.code).toBe(1);
    expect(peek.stderr).toContain("only the lead and observers see other members' attempts");
  }, 90_000);

  it("no token exits 2; an unknown server or token exits 1 with the reason; every protocol works", async () => {
    const t = await team(["alice"]);
    const noToken = await runTeam(["members"], { TEAM_URL: url });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toBe(
      "team: no token: set TEAM_TOKEN (or pass --token) to a member's token\n",
    );
    const down = await runTeam(["members", "--url", "http://127.0.0.1:1"], t.env("alice"));
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^team: unavailable: .*ECONNREFUSED/);
    expect(down.stderr).toContain("(is the server running? check TEAM_URL or --url)\n");
    const stranger = await runTeam(["members", "--token", "tp_nope"], { TEAM_URL: url });
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toMatch(/^team: unauthenticated: malformed token/);
    for (const protocol of ["grpc", "grpc-web"]) {
      const listed = json(
        await runTeam(["members", "--json"], { ...t.env("alice"), TEAM_PROTOCOL: protocol }),
      );
      expect(listed.members).toHaveLength(2);
    }
    // A refusal's rule travels in the gRPC trailers too.
    for (const protocol of ["grpc", "grpc-web"]) {
      const refused = await runTeam(["shutdown", "*", "--protocol", protocol], t.env("team-lead"));
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^team: refused by rule no-broadcast \(invalid_argument\): /);
    }
  }, 60_000);
});

async function waitUntil(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the CLI");
    await new Promise((r) => setTimeout(r, 25));
  }
}
