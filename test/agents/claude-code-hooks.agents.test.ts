import { expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { MemberStatus, PermissionMode, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { CLAUDE_CODE_VERSION, claudeProject } from "../support/claude-code.js";
import { type ModelRequest, startFakeAnthropic } from "../support/fake-anthropic.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import {
  everythingShown,
  hasTeamTools,
  newSinceLastTurn,
  protocolBlocks,
  teamTool,
  waitForTeamTools,
} from "../support/scripted-model.js";

/**
 * The real Claude Code as a teammate with `team hooks install` and `team mcp`, its model a
 * script that never calls wait_for_messages: everything it hears of its team comes from the
 * hooks (SessionStart, PostToolUse, Stop). It still runs plan approval and answers a
 * shutdown request.
 */
describeEachDatabase(`Claude Code ${CLAUDE_CODE_VERSION} with team hooks`, (env) => {
  async function team(): Promise<{ lead: TeamClient; token: string }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"), { leadPermissionMode: "plan" });
    const lead = anon.withToken(created.token);
    return { lead, token: (await lead.addMember("worker")).token };
  }

  /** A project with the docs' commands run in it: `claude mcp add` and `team hooks install`. */
  async function teammateProject(anthropicUrl: string, token: string) {
    const project = await claudeProject(anthropicUrl);
    const url = env().server.url;
    const add = await project.claude([
      ...["mcp", "add", "team", "-e", `TEAM_URL=${url}`, "-e", `TEAM_TOKEN=${token}`],
      ...["--", "team", "mcp"],
    ]);
    expect(add.code, add.stderr).toBe(0);
    const install = await project.team(["hooks", "install", "--dir", project.dir]);
    expect(install.code, install.stderr).toBe(0);
    return {
      project,
      run: (prompt: string) =>
        project.ask(prompt, ["--allowedTools", "mcp__team"], {
          env: { TEAM_URL: url, TEAM_TOKEN: token },
        }),
    };
  }

  it("never calls wait_for_messages, and still: plan rejected, revised, approved (mode inherited); shutdown held by Stop and approved", async () => {
    const { lead, token } = await team();
    const plans = ["1. rewrite the parser", "1. add parser tests\n2. rewrite the parser"];
    let submitted = 0;
    let shutdownId = "";
    const leadAnswered = async (n: number) => {
      // The lead reads its inbox and answers each plan: the first rejected, the second approved.
      const { requests } = await lead.listRequests({ kind: "plan_approval", status: "pending" });
      for (const r of requests) {
        if (n === 1) await lead.rejectPlan(r.requestId, "add tests first");
        else await lead.approvePlan(r.requestId);
      }
    };
    const model = async (request: ModelRequest) => {
      if (!hasTeamTools(request)) return waitForTeamTools;
      const news = newSinceLastTurn(request);
      const shutdown = protocolBlocks(news, "shutdown-request").find((b) =>
        b.body.includes("approve: true }"),
      );
      if (shutdown) {
        return teamTool("send_message", {
          to: "team-lead",
          message: {
            type: "shutdown_response",
            request_id: shutdown.attrs.request_id,
            approve: true,
          },
        });
      }
      const answer = protocolBlocks(news, "plan-approval-response")[0];
      if (answer?.body.includes("rejected your plan") || submitted === 0) {
        const plan = plans[submitted++] ?? "";
        return teamTool("send_message", {
          to: "team-lead",
          message: { type: "plan_approval_request", plan },
        });
      }
      if (news.includes("It opened request") && !answer) {
        // The plan was sent; some work while the lead reads it (the answer then arrives
        // through the PostToolUse hook of this very call).
        await leadAnswered(submitted);
        return teamTool("list_tasks", {});
      }
      if (answer?.body.includes("approved your plan") && !shutdownId) {
        // The lead asks it to stop just as it ends its turn: only the Stop hook can tell it.
        shutdownId = (await lead.requestShutdown("worker", { reason: "plan done" })).requestId;
        return { text: "The plan is approved; I am done." };
      }
      return { text: "Done." };
    };
    const fake = await startFakeAnthropic(model);
    try {
      const { run } = await teammateProject(fake.url, token);
      const result = await run("You are worker. Work in plan mode: get your plan approved first.");
      expect(result.code, result.stderr).toBe(0);

      // The server's records.
      const { requests: planRecords } = await lead.listRequests({ kind: "plan_approval" });
      const byPlan = new Map(
        planRecords.map((r) => [
          r.request?.kind.case === "planApprovalRequest" ? r.request.kind.value.plan : "",
          r,
        ]),
      );
      expect(byPlan.get(plans[0] ?? "")?.status).toBe(RequestStatus.REJECTED);
      expect(byPlan.get(plans[1] ?? "")?.status).toBe(RequestStatus.APPROVED);
      const shutdown = await lead.getRequest(shutdownId);
      expect(shutdown.status).toBe(RequestStatus.APPROVED);
      const worker = (await lead.members()).find((m) => m.name === "worker");
      expect(worker?.status).toBe(MemberStatus.STOPPED);
      expect(worker?.permissionMode).toBe(PermissionMode.DEFAULT);

      // What Claude Code showed the model.
      const shown = fake.requests.map(everythingShown);
      const first = shown.find((s) => s.includes("SessionStart hook additional context"));
      expect(first, "SessionStart context").toContain('You are "worker" (teammate)');
      expect(first).toContain("- team-lead (lead, active)");
      const feedback = fake.requests.map(newSinceLastTurn);
      expect(
        feedback.find((s) =>
          s.includes("PostToolUse:mcp__team__list_tasks hook additional context"),
        ),
      ).toMatch(/rejected your plan[\s\S]*Feedback: add tests first/);
      expect(
        feedback.some((s) => /approved your plan[\s\S]*permission mode "default"/.test(s)),
      ).toBe(true);
      const held = feedback.find((s) => s.startsWith("Stop hook feedback"));
      expect(held).toContain(`request_id="${shutdownId}"`);
      expect(held).toContain(
        `shutdown_response to "team-lead": { request_id: "${shutdownId}", approve: true }`,
      );
      // wait_for_messages was never called.
      const calls = fake.requests.flatMap((r) =>
        r.messages.flatMap((m) =>
          typeof m.content === "string" ? [] : m.content.map((b) => b.name ?? ""),
        ),
      );
      expect(calls).toContain("mcp__team__send_message");
      expect(calls).not.toContain("mcp__team__wait_for_messages");
    } finally {
      await fake.close();
    }
  });
});
