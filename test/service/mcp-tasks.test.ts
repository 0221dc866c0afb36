import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp, mcpWays } from "../support/mcp-clients.js";

/**
 * The task protocols through the MCP tools (the SDK's own Client, over `team mcp` and /mcp):
 * every new case through send_message, get_task and list_tasks, refusals as isError results
 * starting with the rule id.
 */
describeEachDatabase("MCP: tasks", (env) => {
  async function team(): Promise<{ lead: TeamClient; leadToken: string; tokens: string[] }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const tokens = [(await lead.addMember("worker")).token, (await lead.addMember("helper")).token];
    return { lead, leadToken: created.token, tokens };
  }
  const requestIdOf = (r: { structuredContent?: unknown }) =>
    (r.structuredContent as { request_id: string }).request_id;

  for (const way of mcpWays) {
    describe(way, () => {
      it("claim (rejected, then approved by the lead's tools), handoff accepted, sign-off rejected then approved", async () => {
        const { lead, leadToken, tokens } = await team();
        const url = env().server.url;
        const [worker, helper, asLead] = await Promise.all([
          connectMcp(way, url, tokens[0] ?? ""),
          connectMcp(way, url, tokens[1] ?? ""),
          connectMcp(way, url, leadToken),
        ]);
        const send = async (from: typeof worker, to: string, message: Record<string, unknown>) => {
          const r = await callTool(from, "send_message", { to, message });
          expect(r.isError, r.text).toBeFalsy();
          return requestIdOf(r);
        };

        const claim = await send(worker, "team-lead", {
          type: "task_claim_request",
          task_id: "t-1",
          note: "mine",
        });
        const seen = await callTool(asLead, "wait_for_messages", { timeout_seconds: 30 });
        expect(seen.text).toContain('worker asks to own task "t-1". Note: mine');
        expect(seen.text).toContain(`task_claim_response to "worker": { request_id: "${claim}"`);
        const blank = await callTool(asLead, "send_message", {
          to: "worker",
          message: { type: "task_claim_response", request_id: claim, approve: false },
        });
        expect(blank.isError).toBe(true);
        expect(blank.text).toMatch(/^reason-on-reject: /);
        await send(asLead, "worker", {
          type: "task_claim_response",
          request_id: claim,
          approve: false,
          reason: "later",
        });
        const again = await send(worker, "team-lead", {
          type: "task_claim_request",
          task_id: "t-1",
        });
        await send(asLead, "worker", {
          type: "task_claim_response",
          request_id: again,
          approve: true,
        });
        const answers = await callTool(worker, "wait_for_messages", { timeout_seconds: 30 });
        expect(answers.text).toContain("the task stays unowned. Reason: later");
        expect(answers.text).toContain("the task is yours now.");

        const handoff = await send(worker, "helper", {
          type: "task_handoff_request",
          task_id: "t-1",
          note: "tests written",
        });
        const offered = await callTool(helper, "wait_for_messages", { timeout_seconds: 30 });
        expect(offered.text).toContain('worker asks you to take over task "t-1"');
        await send(helper, "worker", {
          type: "task_handoff_response",
          request_id: handoff,
          accept: true,
        });
        const owned = await callTool(helper, "get_task", { task_id: "t-1" });
        expect(owned.isError, owned.text).toBeFalsy();
        expect(owned.structuredContent).toMatchObject({
          task: { id: "t-1", state: "claimed", status: "in_progress", owner: "helper" },
        });
        expect(owned.text).toMatch(
          /^task {6}t-1\nsubject {3}t-1\nstatus {4}in_progress\nstate {5}claimed\nowner {5}helper\n/,
        );
        expect(owned.text).toMatch(/task_handoff worker → helper {2}approved/);

        // The old owner may no longer sign it off: the server's rule, as an isError result.
        const stale = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "result_signoff_request", task_id: "t-1", result: "done" },
        });
        expect(stale.isError).toBe(true);
        expect(stale.text).toMatch(/^owner-only-signoff: /);

        const first = await send(helper, "team-lead", {
          type: "result_signoff_request",
          task_id: "t-1",
          result: "42 passed",
          summary: "green",
        });
        await callTool(asLead, "wait_for_messages", { timeout_seconds: 30 });
        await send(asLead, "helper", {
          type: "result_signoff_response",
          request_id: first,
          approve: false,
          feedback: "add the e2e run",
        });
        const second = await send(helper, "team-lead", {
          type: "result_signoff_request",
          task_id: "t-1",
          result: "42 passed, e2e green",
        });
        await send(asLead, "helper", {
          type: "result_signoff_response",
          request_id: second,
          approve: true,
        });
        const verdicts = await callTool(helper, "wait_for_messages", { timeout_seconds: 30 });
        expect(verdicts.text).toContain("Feedback: add the e2e run");
        expect(verdicts.text).toContain("the task is done.");

        const done = await callTool(asLead, "list_tasks", { status: "completed" });
        expect(done.text).toBe("#t-1 [completed] t-1 (helper)");
        expect((await lead.getTask("t-1")).history).toHaveLength(5);
        const none = await callTool(worker, "list_tasks", { owner: "worker" });
        expect(none.text).toBe("No tasks.");
      });

      it("the lead assigns through send_message; bad task input is refused naming the field", async () => {
        const { lead, leadToken, tokens } = await team();
        const asLead = await connectMcp(way, env().server.url, leadToken);
        const worker = await connectMcp(way, env().server.url, tokens[0] ?? "");
        const assigned = await callTool(asLead, "send_message", {
          to: "worker",
          message: { type: "task_assign", task_id: "t-9", note: "start with the lexer" },
        });
        expect(assigned.isError, assigned.text).toBeFalsy();
        const got = await callTool(worker, "wait_for_messages", { timeout_seconds: 30 });
        expect(got.text).toContain('team-lead assigned you task "t-9". Note: start with the lexer');
        expect(got.text).toContain("no answer is needed");
        expect((await lead.getTask("t-9")).task?.owner).toBe("worker");

        const missing = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "task_claim_request" },
        });
        expect(missing.isError).toBe(true);
        expect(missing.text).toMatch(/^invalid-input: message/);
        const state = await callTool(worker, "list_tasks", { status: "finished" });
        expect(state.text).toMatch(/^invalid-input: status: /);
        const notMine = await callTool(worker, "send_message", {
          to: "worker",
          message: { type: "task_assign", task_id: "t-10" },
        });
        expect(notMine.isError).toBe(true);
        expect(notMine.text).toMatch(/^lead-only-assign: /);
      });
    });
  }
});
