import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp, mcpWays } from "../support/mcp-clients.js";

/**
 * A teammate that is an LLM agent's MCP client (the SDK's own Client, over `team mcp` and
 * over /mcp) runs both protocols against a lead using the TypeScript client.
 */
describeEachDatabase("MCP: protocols", (env) => {
  async function team(): Promise<{ lead: TeamClient; token: string }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"), {
      leadPermissionMode: "accept_edits",
    });
    const lead = anon.withToken(created.token);
    const added = await lead.addMember("worker");
    return { lead, token: added.token };
  }

  for (const way of mcpWays) {
    describe(way, () => {
      it("plan approval: rejected with feedback, resubmitted, approved (mode inherited)", async () => {
        const { lead, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);

        const first = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "plan_approval_request", plan: "rewrite everything" },
        });
        expect(first.isError, first.text).toBeFalsy();
        const firstId = (first.structuredContent as { request_id: string }).request_id;
        expect(first.text).toContain(firstId);
        await lead.rejectPlan(firstId, "add tests first");

        const rejected = await callTool(worker, "wait_for_messages", { timeout_seconds: 30 });
        expect(rejected.text).toContain("rejected your plan");
        expect(rejected.text).toContain("add tests first");

        const second = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "plan_approval_request", plan: "tests, then the rewrite" },
        });
        const secondId = (second.structuredContent as { request_id: string }).request_id;
        expect(secondId).not.toBe(firstId);
        await lead.approvePlan(secondId);

        const approved = await callTool(worker, "wait_for_messages", { timeout_seconds: 30 });
        expect(approved.text).toContain("approved your plan");
        expect(approved.text).toContain('"accept_edits"');
        const members = await callTool(worker, "list_members");
        expect(members.text).toMatch(/^worker: teammate, active, mode accept_edits, .* \(you\)$/m);
      });

      it("shutdown: reject needs a reason, reject with one, approve revokes the token", async () => {
        const { lead, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);

        const asked = await lead.requestShutdown("worker", { reason: "wrapping up" });
        const got = await callTool(worker, "wait_for_messages", {});
        expect(got.text).toContain(asked.requestId);
        expect(got.text).toContain("wrapping up");

        const bare = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "shutdown_response", request_id: asked.requestId, approve: false },
        });
        expect(bare.isError).toBe(true);
        expect(bare.text).toMatch(/^reason-on-reject: /);

        const reasoned = await callTool(worker, "send_message", {
          to: "team-lead",
          message: {
            type: "shutdown_response",
            request_id: asked.requestId,
            approve: false,
            reason: "still writing tests",
          },
        });
        expect(reasoned.isError, reasoned.text).toBeFalsy();
        expect((await lead.getRequest(asked.requestId)).status).toBe(3); // REJECTED

        const again = await lead.requestShutdown("worker");
        await callTool(worker, "wait_for_messages", {});
        const yes = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "shutdown_response", request_id: again.requestId, approve: true },
        });
        expect(yes.isError, yes.text).toBeFalsy();

        // The token is revoked: the next call says so plainly.
        if (way === "stdio") {
          const after = await callTool(worker, "list_members");
          expect(after.isError).toBe(true);
          expect(after.text).toMatch(/^unauthenticated: token revoked: member "worker"/);
        } else {
          // /mcp answers 401 with the server's reason, which the SDK puts in its error.
          await expect(callTool(worker, "list_members")).rejects.toMatchObject({
            code: 401,
            message: expect.stringMatching(/token revoked: member \\"worker\\"/),
          });
        }
      });
    });
  }
});
