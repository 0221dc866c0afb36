import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { TaskProgress } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp, mcpWays } from "../support/mcp-clients.js";

/**
 * The task list through the MCP tools, driven by the MCP SDK's own Client over `team mcp` and
 * /mcp, with the calls a prompt written for Claude Code's task tools makes (TaskCreate,
 * TaskUpdate, TaskGet, TaskList: subject, description, activeForm, status, owner,
 * addBlockedBy, addBlocks): they work unchanged, and the server's rules hold.
 */
describeEachDatabase("MCP: the task list in Claude Code's words", (env) => {
  async function team(): Promise<{ lead: TeamClient; leadToken: string; tokens: string[] }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const tokens = [(await lead.addMember("worker")).token, (await lead.addMember("helper")).token];
    return { lead, leadToken: created.token, tokens };
  }

  for (const way of mcpWays) {
    describe(way, () => {
      it("plan, claim, start, complete through a sign-off; the blocked, the cyclic and the hand-made completion refused", async () => {
        const { lead, leadToken, tokens } = await team();
        const url = env().server.url;
        const [asLead, worker, helper] = await Promise.all([
          connectMcp(way, url, leadToken),
          connectMcp(way, url, tokens[0] ?? ""),
          connectMcp(way, url, tokens[1] ?? ""),
        ]);
        const listed = (await worker.listTools()).tools.map((t) => t.name);
        expect(listed).toEqual(
          expect.arrayContaining(["create_task", "update_task", "get_task", "list_tasks"]),
        );

        // The lead plans, as it would with TaskCreate and TaskUpdate.
        const call = async (who: typeof worker, tool: string, args: Record<string, unknown>) => {
          const r = await callTool(who, tool, args);
          expect(r.isError, `${tool}: ${r.text}`).toBeFalsy();
          return r;
        };
        const parse = await call(asLead, "create_task", {
          subject: "Write the parser",
          description: "src/parser.ts, behind --new-parser",
          activeForm: "Writing the parser",
        });
        expect(parse.text).toBe("Created task #1: Write the parser");
        expect(parse.structuredContent).toMatchObject({
          task: { id: "1", status: "pending", ready: true, active_form: "Writing the parser" },
        });
        await call(asLead, "create_task", {
          subject: "Test the parser",
          description: "unit tests",
        });
        await call(asLead, "create_task", { subject: "Document it", description: "README" });
        await call(asLead, "update_task", { taskId: "2", addBlockedBy: ["1"] });
        await call(asLead, "update_task", { taskId: "1", addBlocks: ["3"] });

        const board = await call(worker, "list_tasks", {});
        expect(board.text).toBe(
          [
            "#1 [pending] Write the parser ready",
            "#2 [pending] Test the parser [blocked by #1]",
            "#3 [pending] Document it [blocked by #1]",
          ].join("\n"),
        );
        expect((await call(worker, "list_tasks", { ready: true })).text).toBe(
          "#1 [pending] Write the parser ready",
        );

        // A blocked task cannot be taken: the server names the blocker.
        const blocked = await callTool(helper, "update_task", {
          taskId: "2",
          owner: "helper",
          status: "in_progress",
        });
        expect(blocked.isError).toBe(true);
        expect(blocked.text).toMatch(/^task-blocked: task "2" is blocked by "1"/);
        // A cycle is refused, naming it; nothing changes.
        const cycle = await callTool(asLead, "update_task", { taskId: "3", addBlocks: ["1"] });
        expect(cycle.isError).toBe(true);
        expect(cycle.text).toMatch(/^no-cycle: .*"3" -> "1" -> "3"/);
        expect((await lead.getTask("1")).task?.blockedBy).toEqual([]);

        // The worker takes #1 as Claude Code's teammates do: owner = itself, in_progress.
        const claim = await call(worker, "update_task", {
          taskId: "1",
          owner: "worker",
          status: "in_progress",
        });
        expect(claim.text).toContain("asked team-lead for it (task_claim_request req_");
        const claimId = (claim.structuredContent as { steps: { request_id: string }[] }).steps[0]
          ?.request_id;
        const asked = await call(asLead, "wait_for_messages", { timeout_seconds: 30 });
        expect(asked.text).toContain('worker asks to own task "1"');
        await call(asLead, "send_message", {
          to: "worker",
          message: { type: "task_claim_response", request_id: claimId, approve: true },
        });
        expect((await lead.getTask("1")).task).toMatchObject({
          owner: "worker",
          status: TaskProgress.IN_PROGRESS,
        });

        // Nobody completes by hand: another member's completion is refused by the server.
        const handMade = await callTool(helper, "update_task", {
          taskId: "1",
          status: "completed",
        });
        expect(handMade.isError).toBe(true);
        expect(handMade.text).toMatch(/^signoff-completes: /);

        // The owner's "completed" asks the lead to sign off; the lead's approves it.
        const done = await call(worker, "update_task", {
          taskId: "1",
          status: "completed",
          result: "parser written; 40 tests pass",
        });
        expect(done.text).toContain("it is in_review, and completed once the lead approves");
        const review = await call(helper, "get_task", { taskId: "1" });
        expect(review.structuredContent).toMatchObject({
          task: { id: "1", status: "in_review", owner: "worker", blocks: ["2", "3"] },
        });
        const approved = await call(asLead, "update_task", { taskId: "1", status: "completed" });
        expect(approved.text).toContain("approved worker's result");
        expect((await lead.getTask("1")).task?.status).toBe(TaskProgress.COMPLETED);

        // Both tasks that waited on #1 are ready now, and the lead was told of each.
        expect((await call(helper, "list_tasks", { ready: true })).text).toBe(
          ["#2 [pending] Test the parser ready", "#3 [pending] Document it ready"].join("\n"),
        );
        const told = await call(asLead, "wait_for_messages", { timeout_seconds: 30 });
        expect(told.text).toContain("<status>ready</status>");
        expect(told.text).toContain('Task "2" (Test the parser) is ready');
        expect(told.text).toContain('Task "3" (Document it) is ready');

        // The lead assigns with owner; the teammate hands it on with owner.
        await call(asLead, "update_task", { taskId: "3", owner: "helper" });
        const handoff = await call(helper, "update_task", { taskId: "3", owner: "worker" });
        expect(handoff.text).toContain("offered it to worker");
        // The lead deletes with status deleted; a teammate may not.
        const notYours = await callTool(worker, "update_task", { taskId: "2", status: "deleted" });
        expect(notYours.text).toMatch(/^owner-or-lead-updates: /);
        await call(asLead, "update_task", { taskId: "2", status: "deleted" });
        expect((await call(worker, "list_tasks", { status: "deleted" })).text).toBe(
          "#2 [deleted] Test the parser",
        );
      });
    });
  }
});
