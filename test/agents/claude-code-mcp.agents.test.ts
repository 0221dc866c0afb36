import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { unreadMessages } from "../../client/inbox-delivery.js";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { plain } from "../../client/mcp/plain.js";
import { permissionRequestMessage, permissionResponseMessage } from "../../client/messages.js";
import { MemberStatus, PermissionMode, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { MessageSchema } from "../../gen/team/v1/message_pb.js";
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
        const fake = await startFakeAnthropic(model);
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

  it("what the model is shown for every kind of message: its whole text, its fields as send_message names them, no enum constants", async () => {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"), { leadPermissionMode: "plan" });
    const lead = anon.withToken(created.token);
    const workerToken = (await lead.addMember("worker")).token;
    const helperToken = (await lead.addMember("helper")).token;
    const worker = lead.withToken(workerToken);
    const helper = lead.withToken(helperToken);
    // Every kind of message, each to one of the three members.
    await lead.sendText("worker", "start with the parser");
    const plan = await worker.submitPlan("1. tests");
    await lead.rejectPlan(plan.requestId, "smaller steps");
    const claim = await worker.claimTask("t-1", { note: "I know it" });
    await lead.approveClaim(claim.requestId);
    await lead.assignTask("t-2", "helper", { note: "docs" });
    const handoff = await helper.handOffTask("t-2", "worker", "half done");
    await worker.rejectHandoff(handoff.requestId, "busy with t-1");
    const signoff = await worker.requestSignoff("t-1", "parser rewritten", { summary: "parser" });
    await lead.rejectSignoff(signoff.requestId, "add a changelog entry");
    await helper.notifyTask({ taskId: "t-3", status: "completed", result: "docs built" });
    const stop = await lead.requestShutdown("worker", { reason: "end of day" });
    await lead.cancelRequest(stop.requestId);
    const stopHelper = await lead.requestShutdown("helper", { reason: "wrap up" });
    await helper.rejectShutdown(stopHelper.requestId, "docs half built");
    const asked = await worker.send(
      "team-lead",
      permissionRequestMessage({
        toolName: "Bash",
        description: "Run the parser's tests",
        inputPreview: "npm test -- parser",
        runtimeRequestId: "abcde",
      }),
    );
    await lead.send("worker", permissionResponseMessage(asked.requestId, false, "not on main"));

    const members = [
      { name: "worker", token: workerToken, client: worker },
      { name: "team-lead", token: created.token, client: lead },
      { name: "helper", token: helperToken, client: helper },
    ];
    const kindsSeen = new Set<string>();
    const allShown: string[] = [];
    for (const member of members) {
      // What the member should read: each message rendered from its side (a request settled
      // since reads as settled, an answer names its task), as the hooks would show it too.
      const expected = await unreadMessages(member.client, { limit: 50 });
      let step = 0;
      const fake = await startFakeAnthropic((request) => {
        if (!hasTeamTools(request)) return waitForTeamTools;
        step++;
        if (step === 1) return teamTool("wait_for_messages", { timeout_seconds: 0, max: 50 });
        if (step === 2) return teamTool("list_members", {});
        return { text: "Read them." };
      });
      try {
        const run = await teammate("stdio", fake.url, member.token);
        expect((await run("Read your messages.")).code).toBe(0);
        const shown = toolResults(fake.requests).join("\n");
        allShown.push(shown);
        expect(expected.envelopes.length).toBeGreaterThan(0);
        expected.envelopes.forEach((envelope, i) => {
          const kind = plain(MessageSchema, envelope.message ?? create(MessageSchema)).type;
          kindsSeen.add(String(kind));
          // The whole text toPromptText writes: the body and the exact answer expected.
          expect(shown, `${member.name}: ${kind}`).toContain(expected.texts[i]);
          // The message's fields, as send_message names them.
          for (const [field, value] of Object.entries(
            plain(MessageSchema, envelope.message ?? create(MessageSchema)),
          )) {
            const line = typeof value === "string" ? value : `${field}: ${String(value)}`;
            expect(shown, `${member.name}: ${kind}.${field}`).toContain(line);
          }
        });
        // Enum values as words, never the contract's constants or its TypeScript names.
        expect(shown).not.toMatch(
          /\b(MEMBER_ROLE|MEMBER_STATUS|PERMISSION_MODE|REQUEST_STATUS|REQUEST_KIND|TASK_STATUS)_/,
        );
        expect(shown).not.toMatch(/"type": ?"[a-z]+[A-Z]/);
        expect(shown).toContain(
          `${member.name}: ${member.name === "team-lead" ? "lead" : "teammate"}, active`,
        );
      } finally {
        await fake.close();
      }
    }
    // Every kind the contract has was shown to a model (a new kind needs a case here).
    expect([...kindsSeen].sort()).toEqual(MessageSchema.fields.map((f) => f.name).sort());
    // An answer names the task it was about, with no placeholder left.
    expect(allShown.join("\n")).toContain('approved your claim of task "t-1"');
    expect(allShown.join("\n")).not.toContain('"<task-id>"');
  });
});
