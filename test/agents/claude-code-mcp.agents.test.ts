import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient, toPromptText } from "../../client/index.js";
import { MemberStatus, PermissionMode, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { CLAUDE_CODE_VERSION, claudeProject } from "../support/claude-code.js";
import { type ModelRequest, startFakeAnthropic } from "../support/fake-anthropic.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { type McpWay, mcpWays } from "../support/mcp-clients.js";
import {
  hasTeamTools,
  newSinceLastTurn,
  protocolBlocks,
  teamTool,
  waitForTeamTools,
} from "../support/scripted-model.js";

/**
 * The real Claude Code as a teammate configured with the docs' exact `claude mcp add`
 * command (stdio through `team mcp`, and HTTP to the server's /mcp), no hooks: it hears its
 * team only through wait_for_messages, and its model decides from what it was shown.
 */
describeEachDatabase(`Claude Code ${CLAUDE_CODE_VERSION} through the MCP tools`, (env) => {
  async function team(): Promise<{ lead: TeamClient; token: string }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"), { leadPermissionMode: "plan" });
    const lead = anon.withToken(created.token);
    return { lead, token: (await lead.addMember("worker")).token };
  }

  /** The docs' `claude mcp add` for the way, then `claude -p`. */
  async function teammate(way: McpWay, anthropicUrl: string, token: string) {
    const project = await claudeProject(anthropicUrl);
    const url = env().server.url;
    const add = await project.claude(
      way === "stdio"
        ? ["mcp", "add", "team", "-e", `TEAM_URL=${url}`, "-e", `TEAM_TOKEN=${token}`, "--"].concat(
            ["team", "mcp"],
          )
        : ["mcp", "add", "--transport", "http", "team", `${url}/mcp`].concat([
            "--header",
            `Authorization: Bearer ${token}`,
          ]),
    );
    expect(add.code, add.stderr).toBe(0);
    return (prompt: string) => project.ask(prompt, ["--allowedTools", "mcp__team"]);
  }

  const toolResults = (requests: ModelRequest[]) => requests.map(newSinceLastTurn);

  for (const way of mcpWays) {
    describe(way, () => {
      it("plan approval (rejected with feedback, revised, approved: mode inherited), then the shutdown handshake", async () => {
        const { lead, token } = await team();
        const plans = ["1. rewrite the parser", "1. add parser tests\n2. rewrite the parser"];
        let submitted = 0;
        let shutdownId = "";
        let triedBareReject = false;
        // The lead, live: rejects the first plan, approves the second, then asks for a stop.
        const leadAnswers = async () => {
          const { requests } = await lead.listRequests({ status: "pending" });
          for (const r of requests) {
            if (submitted === 1) await lead.rejectPlan(r.requestId, "add tests first");
            else await lead.approvePlan(r.requestId);
          }
        };
        let planJustSent = false;
        let approvedShutdown = false;
        const model = async (request: ModelRequest) => {
          if (!hasTeamTools(request)) return waitForTeamTools;
          const news = newSinceLastTurn(request);
          if (approvedShutdown) return { text: "Stopped." };
          if (planJustSent) {
            // The plan is with the lead now, who answers while this teammate waits.
            planJustSent = false;
            await leadAnswers();
            return teamTool("wait_for_messages", { timeout_seconds: 30 });
          }
          const shutdown = protocolBlocks(news, "shutdown-request").find((b) =>
            b.body.includes("approve: true }"),
          );
          if (shutdown && !triedBareReject) {
            triedBareReject = true;
            return teamTool("send_message", {
              to: "team-lead",
              message: {
                type: "shutdown_response",
                request_id: shutdown.attrs.request_id,
                approve: false,
              },
            });
          }
          if (news.includes("reason-on-reject")) {
            approvedShutdown = true;
            return teamTool("send_message", {
              to: "team-lead",
              message: { type: "shutdown_response", request_id: shutdownId, approve: true },
            });
          }
          const answer = protocolBlocks(news, "plan-approval-response")[0];
          if (submitted === 0 || answer?.body.includes("rejected your plan")) {
            planJustSent = true;
            return teamTool("send_message", {
              to: "team-lead",
              message: { type: "plan_approval_request", plan: plans[submitted++] },
            });
          }
          if (answer?.body.includes("approved your plan") && !shutdownId) {
            shutdownId = (await lead.requestShutdown("worker", { reason: "plan done" })).requestId;
          }
          return teamTool("wait_for_messages", { timeout_seconds: 30 });
        };
        const fake = await startFakeAnthropic(async (r) => {
          const t = await model(r);
          console.log(
            "SHOWN:",
            newSinceLastTurn(r).slice(-400),
            "\nDID:",
            JSON.stringify(t).slice(0, 300),
          );
          return t;
        });
        try {
          const run = await teammate(way, fake.url, token);
          const result = await run("You are worker, in plan mode. Get your plan approved.");
          expect(result.code, result.stderr).toBe(0);

          const { requests } = await lead.listRequests({ kind: "plan_approval" });
          expect(requests.map((r) => r.status).sort()).toEqual(
            [RequestStatus.APPROVED, RequestStatus.REJECTED].sort(),
          );
          expect((await lead.getRequest(shutdownId)).status).toBe(RequestStatus.APPROVED);
          const worker = (await lead.members()).find((m) => m.name === "worker");
          expect(worker?.status).toBe(MemberStatus.STOPPED);
          expect(worker?.permissionMode).toBe(PermissionMode.DEFAULT);

          const shown = toolResults(fake.requests);
          expect(
            shown.some((s) => /rejected your plan[\s\S]*Feedback: add tests first/.test(s)),
          ).toBe(true);
          expect(shown.some((s) => /approved your plan[\s\S]*"default"/.test(s))).toBe(true);
          expect(shown.some((s) => s.includes("reason-on-reject"))).toBe(true);
          expect(
            shown.some((s) =>
              s.includes(
                `shutdown_response to "team-lead": { request_id: "${shutdownId}", approve: true }`,
              ),
            ),
          ).toBe(true);
        } finally {
          await fake.close();
        }
      });
    });
  }

  it("what the model is shown for every kind of message a teammate receives", async () => {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"), { leadPermissionMode: "plan" });
    const lead = anon.withToken(created.token);
    const workerToken = (await lead.addMember("worker")).token;
    const worker = lead.withToken(workerToken);
    const helper = lead.withToken((await lead.addMember("helper")).token);
    await lead.sendText("worker", "start with the parser");
    const plan = await worker.submitPlan("1. tests");
    await lead.rejectPlan(plan.requestId, "smaller steps");
    const claim = await worker.claimTask("t-1", { note: "I know it" });
    await lead.approveClaim(claim.requestId);
    await lead.assignTask("t-2", "helper", { note: "docs" });
    await helper.handOffTask("t-2", "worker", "half done");
    const signoff = await worker.requestSignoff("t-1", "parser rewritten");
    await lead.rejectSignoff(signoff.requestId, "add a changelog entry");
    const stop = await lead.requestShutdown("worker", { reason: "end of day" });
    await lead.cancelRequest(stop.requestId);
    const expected = (await worker.readInbox({ limit: 50 })).envelopes;
    expect(new Set(expected.map((e) => e.message?.kind.case))).toEqual(
      new Set([
        "text",
        "planApprovalResponse",
        "taskClaimResponse",
        "taskHandoffRequest",
        "resultSignoffResponse",
        "shutdownRequest",
        "requestUpdate",
      ]),
    );

    let waited = false;
    const fake = await startFakeAnthropic((request) => {
      if (!hasTeamTools(request)) return waitForTeamTools;
      if (waited) return { text: "Read them." };
      waited = true;
      return teamTool("wait_for_messages", { timeout_seconds: 0, max: 50 });
    });
    try {
      const run = await teammate("stdio", fake.url, workerToken);
      expect((await run("Read your messages.")).code).toBe(0);
      const shown = toolResults(fake.requests).join("\n");
      for (const envelope of expected) {
        // Each message as toPromptText renders it: its body and the answer it expects.
        const text = toPromptText(envelope).split("\n").slice(1, -1).join("\n");
        expect(shown, envelope.message?.kind.case).toContain(text);
      }
    } finally {
      await fake.close();
    }
  });
});
