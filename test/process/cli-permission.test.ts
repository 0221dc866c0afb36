import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { MemberRole, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { type CliResult, runTeam, type ServeProcess, startTeamServe } from "../support/cli.js";
import { uniqueName } from "../support/harness.js";

/**
 * The CLI answers a permission request like any request (`team allow`, `team deny`), and an
 * approver added with `team add-member --approver` answers the lead's approvals with the same
 * commands: each a child process against `team serve`.
 */

let dir: string;
let serve: ServeProcess;
let url: string;

beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), "tp-cli-perm-"));
  // The embedded database takes a while to open on a busy machine.
  serve = await startTeamServe(["--port", "0", "--data-dir", join(dir, "data")], 120_000);
  url = serve.url;
}, 150_000);

afterAll(async () => {
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

const as = (token: string): Record<string, string> => ({ TEAM_URL: url, TEAM_TOKEN: token });

function ok(result: CliResult): CliResult {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
  return result;
}

const permission = (runtimeRequestId: string) => ({
  kind: {
    case: "permissionRequest" as const,
    value: { toolName: "Bash", description: "list", inputPreview: "ls", runtimeRequestId },
  },
});

describe("the team CLI: permission requests and the approver", () => {
  it("team allow / team deny (a deny needs --reason); an approver answers with the same commands", async () => {
    const anon = createTeamClient({ baseUrl: url });
    const created = await anon.createTeam(uniqueName("cli"));
    const lead = anon.withToken(created.token);
    const alice = anon.withToken((await lead.addMember("alice")).token);

    const first = await alice.send("team-lead", permission("abcde"));
    const refused = await runTeam(["deny", first.requestId], as(created.token));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("reason-on-reject");
    ok(await runTeam(["deny", first.requestId, "--reason", "not today"], as(created.token)));
    expect((await lead.getRequest(first.requestId)).status).toBe(RequestStatus.REJECTED);

    const added = JSON.parse(
      ok(await runTeam(["add-member", "judge", "--approver", "--json"], as(created.token))).stdout,
    );
    expect(added.member.role).toBe("MEMBER_ROLE_APPROVER");
    const judge = as(added.token);
    const second = await alice.send("team-lead", permission("fghij"));
    const pending = ok(await runTeam(["requests", "--status", "pending"], judge)).stdout;
    expect(pending).toContain(second.requestId);
    ok(await runTeam(["allow", second.requestId], judge));
    const r = await lead.getRequest(second.requestId);
    expect(r.status).toBe(RequestStatus.APPROVED);
    expect(r.answeredBy).toBe("judge");

    const plan = await alice.submitPlan("1. ship it");
    ok(await runTeam(["approve", plan.requestId], judge));
    expect((await lead.getRequest(plan.requestId)).answeredBy).toBe("judge");
    // Nothing else a lead does.
    const shutdown = await runTeam(["shutdown", "alice"], judge);
    expect(shutdown.code).not.toBe(0);
    expect(shutdown.stderr).toContain("approver-acts-for-lead");
    expect((await lead.members()).find((m) => m.name === "judge")?.role).toBe(MemberRole.APPROVER);
  }, 180_000);
});
