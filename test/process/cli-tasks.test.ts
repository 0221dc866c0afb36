import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { type CliResult, runTeam, type ServeProcess, startTeamServe } from "../support/cli.js";
import { uniqueName } from "../support/harness.js";

/**
 * `team task …` as people and scripts use it: each command a child process against a real
 * server (`team serve`), judged by exit code, stdout and stderr, and by what the server
 * stored (GetTask through the library).
 */

let dir: string;
let serve: ServeProcess;
let url: string;

beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), "tp-cli-tasks-"));
  serve = await startTeamServe(["--port", "0", "--data-dir", join(dir, "data")]);
  url = serve.url;
});

afterAll(async () => {
  if (serve) await serve.stop();
  await rm(dir, { recursive: true, force: true });
});

async function team(teammates: string[]) {
  const anon = createTeamClient({ baseUrl: url });
  const created = await anon.createTeam(uniqueName("cli-tasks"));
  const lead = anon.withToken(created.token);
  const tokens: Record<string, string> = { "team-lead": created.token };
  for (const name of teammates) tokens[name] = (await lead.addMember(name)).token;
  return { lead, env: (name: string) => ({ TEAM_URL: url, TEAM_TOKEN: tokens[name] ?? "" }) };
}

function ok(result: CliResult): CliResult {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
  return result;
}
const json = (result: CliResult) => JSON.parse(ok(result).stdout);
const requestIdIn = (text: string) => /request (req_[A-Za-z0-9_-]{22})/.exec(text)?.[1] ?? "";

describe("team task", () => {
  it("claim, answer (reject needs a reason, then approve), handoff, answer, signoff, get, list", async () => {
    const t = await team(["alice", "bob"]);
    const claimed = ok(await runTeam(["task", "claim", "t-1", "--note", "mine"], t.env("alice")));
    const c1 = requestIdIn(claimed.stdout);
    expect(claimed.stdout).toBe(`sent to team-lead (seq 1); request ${c1}\n`);

    const bare = await runTeam(["task", "answer", c1, "--reject"], t.env("team-lead"));
    expect(bare).toMatchObject({ code: 1, stdout: "" });
    expect(bare.stderr).toMatch(/^team: refused by rule reason-on-reject \(invalid_argument\): /);
    const both = await runTeam(["task", "answer", c1, "--approve", "--reject"], t.env("team-lead"));
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("exactly one of --approve and --reject");
    expect(
      ok(await runTeam(["task", "answer", c1, "--reject", "--reason", "later"], t.env("team-lead")))
        .stdout,
    ).toBe(`sent to alice (seq 1); request ${c1}\n`);
    const c2 = json(await runTeam(["task", "claim", "t-1", "--json"], t.env("alice"))).requestId;
    ok(await runTeam(["task", "answer", c2, "--approve"], t.env("team-lead")));

    const offered = requestIdIn(
      ok(await runTeam(["task", "handoff", "t-1", "bob", "--note", "half done"], t.env("alice")))
        .stdout,
    );
    const noNote = await runTeam(["task", "handoff", "t-1", "bob"], t.env("alice"));
    expect(noNote.code).toBe(2);
    expect(noNote.stderr).toContain("--note");
    expect(ok(await runTeam(["task", "answer", offered, "--approve"], t.env("bob"))).stdout).toBe(
      `sent to alice (seq 3); request ${offered}\n`,
    );
    const stale = await runTeam(["task", "signoff", "t-1", "done", "--json"], t.env("alice"));
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stderr).error).toMatchObject({ rule: "owner-only-signoff" });

    const s1 = requestIdIn(
      ok(
        await runTeam(
          ["task", "signoff", "t-1", "--file", "-", "--summary", "green"],
          t.env("bob"),
          "42 passed\n",
        ),
      ).stdout,
    );
    expect((await t.lead.getRequest(s1)).request?.kind.value).toMatchObject({
      taskId: "t-1",
      result: "42 passed\n",
      summary: "green",
    });
    const noFeedback = await runTeam(["task", "answer", s1, "--reject"], t.env("team-lead"));
    expect(noFeedback.stderr).toMatch(/^team: refused by rule feedback-on-reject /);
    ok(
      await runTeam(
        ["task", "answer", s1, "--reject", "--feedback", "add the e2e run"],
        t.env("team-lead"),
      ),
    );
    const s2 = requestIdIn(
      ok(await runTeam(["task", "signoff", "t-1", "42", "passed,", "e2e", "green"], t.env("bob")))
        .stdout,
    );
    ok(await runTeam(["task", "answer", s2, "--approve"], t.env("team-lead")));
    const prompt = ok(await runTeam(["inbox", "--prompt"], t.env("bob"))).stdout;
    expect(prompt).toContain(
      `team-lead rejected your result (request ${s1}). Feedback: add the e2e run`,
    );
    expect(prompt).toContain(`team-lead signed off your result (request ${s2}): the task is done.`);

    const shown = ok(await runTeam(["task", "get", "t-1"], t.env("team-lead"))).stdout;
    expect(shown).toMatch(
      /^task {6}t-1\nsubject {3}t-1\nstatus {4}completed\nstate {5}done\nowner {5}bob\n/,
    );
    expect(shown.match(/^ {2}\S+Z {2}\w+ /gm)).toHaveLength(5);
    expect(shown).toMatch(new RegExp(`task_handoff alice → bob {2}approved {2}${offered}`));
    const got = json(await runTeam(["task", "get", "t-1", "--json"], t.env("bob")));
    expect(got.task).toMatchObject({ taskId: "t-1", state: "TASK_STATE_DONE", owner: "bob" });
    expect(got.history.map((r: { kind: string }) => r.kind)).toEqual([
      "REQUEST_KIND_TASK_CLAIM",
      "REQUEST_KIND_TASK_CLAIM",
      "REQUEST_KIND_TASK_HANDOFF",
      "REQUEST_KIND_RESULT_SIGNOFF",
      "REQUEST_KIND_RESULT_SIGNOFF",
    ]);
  }, 120_000);

  it("assign, list (text, --state, --owner, --json), and an assignment takes no answer", async () => {
    const t = await team(["alice"]);
    const assigned = ok(
      await runTeam(
        ["task", "assign", "t-2", "alice", "--note", "lexer first"],
        t.env("team-lead"),
      ),
    );
    const id = requestIdIn(assigned.stdout);
    expect(assigned.stdout).toBe(`sent to alice (seq 1); request ${id}\n`);
    const noAnswer = await runTeam(["task", "answer", id, "--approve"], t.env("team-lead"));
    expect(noAnswer.code).toBe(2);
    expect(noAnswer.stderr).toBe("team: a task_assign request takes no answer\n");
    ok(await runTeam(["task", "claim", "t-3"], t.env("alice")));
    const notLead = await runTeam(["task", "assign", "t-4", "alice"], t.env("alice"));
    expect(notLead.code).toBe(1);
    expect(notLead.stderr).toMatch(/^team: refused by rule lead-only-assign /);

    const listed = ok(await runTeam(["task", "list"], t.env("team-lead"))).stdout.split("\n");
    expect(listed[0]).toMatch(/^TASK\s+STATUS\s+OWNER\s+WAITS ON\s+UPDATED\s+SUBJECT$/);
    expect(listed.slice(1, 3).sort()).toEqual([
      expect.stringMatching(/^t-2\s+pending\s+alice\s+-\s+\S+Z\s+t-2$/),
      expect.stringMatching(/^t-3\s+pending \(ready\)\s+-\s+-\s+\S+Z\s+t-3$/),
    ]);
    const unowned = json(
      await runTeam(["task", "list", "--state", "unowned", "--json"], t.env("alice")),
    );
    expect(unowned.tasks.map((x: { taskId: string }) => x.taskId)).toEqual(["t-3"]);
    expect(ok(await runTeam(["task", "list", "--state", "done"], t.env("alice"))).stdout).toBe(
      "no tasks\n",
    );
    const badState = await runTeam(["task", "list", "--state", "finished"], t.env("alice"));
    expect(badState.code).toBe(2);
    const mine = json(
      await runTeam(["task", "list", "--owner", "alice", "--json"], t.env("alice")),
    );
    expect(mine.tasks.map((x: { taskId: string }) => x.taskId)).toEqual(["t-2"]);
  }, 90_000);

  it("create, update (text, dependencies, status), list --ready / --blocked, delete; refusals name their rule", async () => {
    const t = await team(["alice"]);
    const lead = t.env("team-lead");
    expect(ok(await runTeam(["task", "create", "Write", "the", "parser"], lead)).stdout).toBe(
      "created task 1 (ready)\n",
    );
    expect(
      ok(
        await runTeam(
          ["task", "create", "Test it", "--blocked-by", "1", "--active-form", "Testing"],
          lead,
        ),
      ).stdout,
    ).toBe("created task 2 (blocked by 1)\n");
    const docs = json(
      await runTeam(
        ["task", "create", "Document it", "--id", "docs", "--file", "-", "--json"],
        t.env("alice"),
        "README and --help\n",
      ),
    );
    expect(docs).toMatchObject({
      taskId: "docs",
      description: "README and --help\n",
      createdBy: "alice",
    });
    ok(await runTeam(["task", "update", "docs", "--add-blocked-by", "1,2"], lead));

    const ready = ok(await runTeam(["task", "list", "--ready"], t.env("alice"))).stdout;
    expect(ready.split("\n").slice(1, -1)).toEqual([
      expect.stringMatching(/^1\s+pending \(ready\)\s+-\s+-\s+\S+Z\s+Write the parser$/),
    ]);
    const blocked = ok(await runTeam(["task", "list", "--blocked"], t.env("alice"))).stdout;
    expect(blocked).toMatch(/^2\s+pending\s+-\s+1\s+/m);
    expect(blocked).toMatch(/^docs\s+pending\s+-\s+1,2\s+\S+Z\s+Document it$/m);
    expect((await runTeam(["task", "list", "--ready", "--blocked"], lead)).code).toBe(2);

    const cycle = await runTeam(["task", "update", "1", "--add-blocked-by", "docs"], lead);
    expect(cycle.code).toBe(1);
    expect(cycle.stderr).toMatch(/^team: refused by rule no-cycle .*"1" -> "docs" -> "1"/);
    const blockedClaim = await runTeam(["task", "claim", "2"], t.env("alice"));
    expect(blockedClaim.stderr).toMatch(/^team: refused by rule task-blocked .*blocked by "1"/);
    const byHand = await runTeam(["task", "update", "1", "--status", "completed"], lead);
    expect(byHand.stderr).toMatch(/^team: refused by rule signoff-completes /);

    ok(await runTeam(["task", "assign", "1", "alice"], lead));
    const started = ok(
      await runTeam(["task", "update", "1", "--status", "in_progress"], t.env("alice")),
    ).stdout;
    expect(started).toMatch(/^status {4}in_progress$/m);
    const notLead = await runTeam(["task", "delete", "docs"], t.env("alice"));
    expect(notLead.stderr).toMatch(/^team: refused by rule owner-or-lead-updates /);
    expect(ok(await runTeam(["task", "delete", "2"], lead)).stdout).toBe("deleted task 2\n");
    const deleted = json(await runTeam(["task", "list", "--status", "deleted", "--json"], lead));
    expect(deleted.tasks.map((x: { taskId: string }) => x.taskId)).toEqual(["2"]);
    expect((await t.lead.getTask("docs")).task?.openBlockers).toEqual(["1"]);
  }, 120_000);
});
