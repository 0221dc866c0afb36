import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { requestStatusName } from "../../client/names.js";
import { runTeam, type ServeProcess, startTeamServe } from "../support/cli.js";
import { uniqueName } from "../support/harness.js";

/**
 * The CLI for a person: one answer verb for every kind (the old verbs pointing to it),
 * whoami, members marking you, add-member's export line, rotate-token, watch --history.
 */

let dir: string;
let serve: ServeProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), "tp-person-"));
  // A deadline, not a figure: the embedded database starts slowly on a loaded machine.
  serve = await startTeamServe(["--port", "0", "--data-dir", join(dir, "data")], 120_000);
}, 150_000);

afterAll(async () => {
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

const env = (token: string) => ({ TEAM_URL: serve.url, TEAM_TOKEN: token });

async function team(mode?: "plan") {
  const anon = createTeamClient({ baseUrl: serve.url });
  const name = uniqueName("person");
  const created = await anon.createTeam(name, mode ? { leadPermissionMode: mode } : {});
  const lead = anon.withToken(created.token);
  const alice = (await lead.addMember("alice")).token;
  return { name, lead, leadToken: created.token, alice, aliceClient: anon.withToken(alice) };
}

describe("the CLI for a person", () => {
  it("team answer answers a plan, a shutdown and a claim; old verbs on the wrong kind name it", async () => {
    const t = await team("plan");
    const plan = (await t.aliceClient.submitPlan("refactor the store")).requestId;
    const wrong = await runTeam(["answer-shutdown", plan, "--approve"], env(t.alice));
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toBe(
      `team: ${plan} is a plan_approval request, which \`team answer-shutdown\` does not answer: use \`team answer ${plan} --approve\`\n`,
    );
    const neither = await runTeam(["answer", plan], env(t.leadToken));
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("give exactly one of --approve and --reject REASON");
    const approved = await runTeam(["answer", plan, "--approve"], env(t.leadToken));
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toBe(`sent to alice (seq 1); request ${plan}\n`);
    expect(requestStatusName((await t.lead.getRequest(plan)).status)).toBe("approved");

    const shutdown = (await t.lead.requestShutdown("alice", { reason: "done" })).requestId;
    const viaApprove = await runTeam(["approve", shutdown], env(t.alice));
    expect(viaApprove.stderr).toContain(`use \`team answer ${shutdown} --approve\``);
    const rejected = await runTeam(["answer", shutdown, "--reject", "still testing"], env(t.alice));
    expect(rejected.code, rejected.stderr).toBe(0);
    const record = await t.lead.getRequest(shutdown);
    expect(requestStatusName(record.status)).toBe("rejected");
    expect(
      record.response?.kind.case === "shutdownResponse" && record.response.kind.value.reason,
    ).toBe("still testing");

    await t.lead.createTask("write docs", { taskId: "docs" });
    const claim = (await t.aliceClient.claimTask("docs")).requestId;
    const viaReject = await runTeam(["reject", claim, "--feedback", "no"], env(t.leadToken));
    expect(viaReject.stderr).toContain(`use \`team answer ${claim} --reject "REASON"\``);
    const claimed = await runTeam(["answer", claim, "--approve", "--json"], env(t.leadToken));
    expect(JSON.parse(claimed.stdout)).toMatchObject({ requestId: claim });
    expect((await t.lead.getTask("docs")).task?.owner).toBe("alice");
  }, 120_000);

  it("whoami, members marks you, add-member prints the export line, watch --history exits", async () => {
    const t = await team();
    const who = await runTeam(["whoami"], env(t.alice));
    expect(who.stdout).toBe(
      `alice in team "${t.name}" (teammate, permission mode default); the lead is team-lead; server ${serve.url}\n`,
    );
    expect(JSON.parse((await runTeam(["whoami", "--json"], env(t.leadToken))).stdout)).toEqual({
      team: t.name,
      name: "team-lead",
      role: "lead",
      permission_mode: "default",
      lead: "team-lead",
      url: serve.url,
    });
    const members = (await runTeam(["members"], env(t.alice))).stdout;
    expect(members).toMatch(/\nalice \(you\)\s+teammate\s+active/);
    expect(members).toMatch(/\nteam-lead\s+lead/);
    const added = await runTeam(["add-member", "bob"], env(t.leadToken));
    const token = /token \(shown only once\): (tp_\S+)/.exec(added.stdout)?.[1];
    expect(added.stdout).toContain(`\n  export TEAM_URL=${serve.url} TEAM_TOKEN=${token}\n`);
    await t.lead.sendText("alice", "kept in the feed");
    const history = await runTeam(["watch", "--history"], env(t.leadToken));
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain("kept in the feed");
    expect(history.stdout).toContain("bob");
  }, 120_000);

  it("rotate-token: your own and, as the lead, a teammate's; the old token is refused at once", async () => {
    const t = await team();
    const own = await runTeam(["rotate-token", "--json"], env(t.alice));
    expect(own.code, own.stderr).toBe(0);
    const fresh = JSON.parse(own.stdout).token as string;
    const old = await t.aliceClient.members().catch((e) => ConnectError.from(e));
    expect((old as ConnectError).code).toBe(Code.Unauthenticated);
    const refused = await runTeam(["rotate-token", "team-lead"], env(fresh));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("only the team lead may rotate another member's token");
    const byLead = await runTeam(["rotate-token", "alice"], env(t.leadToken));
    expect(byLead.stdout).toMatch(
      /^new token for "alice" \(shown only once; the old one no longer works\): tp_/,
    );
    const newest = /TEAM_TOKEN=(tp_\S+)/.exec(byLead.stdout)?.[1] ?? "";
    expect(await createTeamClient({ baseUrl: serve.url, token: newest }).leadName()).toBe(
      "team-lead",
    );
    const stale = await runTeam(["members"], env(fresh));
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("unauthenticated");
  }, 120_000);
});

describe("team delete-team", () => {
  it("asks to confirm (--yes for scripts), is the lead's only, and leaves no token working", async () => {
    const t = await team();
    const unconfirmed = await runTeam(["delete-team", t.name], env(t.leadToken));
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain(`add --yes to delete "${t.name}"`);
    const byMate = await runTeam(["delete-team", t.name, "--yes"], env(t.alice));
    expect(byMate.code).toBe(1);
    expect(byMate.stderr).toContain("only the team lead may delete the team");
    const deleted = await runTeam(["delete-team", t.name, "--yes"], env(t.leadToken));
    expect(deleted.stdout).toBe(`deleted team "${t.name}": 2 member token(s) no longer work\n`);
    const after = await t.aliceClient.members().catch((e) => ConnectError.from(e));
    expect((after as ConnectError).code).toBe(Code.Unauthenticated);
  }, 120_000);
});
