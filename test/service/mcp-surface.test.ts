import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp, mcpWays } from "../support/mcp-clients.js";
import { eventually } from "../support/wait.js";

/**
 * The MCP surface as a model meets it, through the SDK's own Client: input errors that
 * say which field and what the meant type takes, a JSON string never sent as text, answers
 * that name their task, one output style (the text first, then snake_case data with enum
 * words), whoami, and a wait that tells the model to call again.
 */
describeEachDatabase("MCP: the surface for a model", (env) => {
  async function team(): Promise<{
    lead: TeamClient;
    worker: TeamClient;
    leadToken: string;
    token: string;
    name: string;
  }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const name = uniqueName("team");
    const created = await anon.createTeam(name);
    const lead = anon.withToken(created.token);
    const token = (await lead.addMember("worker")).token;
    return { lead, worker: lead.withToken(token), leadToken: created.token, token, name };
  }

  /** Every result: structuredContent's first key is the text, and no enum constant or camelCase key. */
  function oneStyle(r: { text: string; structuredContent?: unknown }) {
    const s = r.structuredContent as Record<string, unknown>;
    expect(Object.keys(s)[0]).toBe("text");
    expect(s.text).toBe(r.text);
    const json = JSON.stringify(s);
    expect(json).not.toMatch(/[A-Z]{3,}_[A-Z]{3,}/);
    expect(json).not.toMatch(/"[a-z]+[A-Z][a-zA-Z]*":/);
  }

  for (const way of mcpWays) {
    describe(way, () => {
      it("a bad message names the field, the type it was read as and the fields that type takes; nothing is stored", async () => {
        const { lead, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        const missing = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "shutdown_response", approve: "yes" },
        });
        expect(missing.isError).toBe(true);
        expect(missing.text).toMatch(
          /^invalid-input: message was read as shutdown_response, which takes \{request_id, approve, reason\?\}: /,
        );
        expect(missing.text).toContain("message.request_id");
        expect(missing.text).toContain("message.approve");
        const unknown = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "shutdown", reason: "x" },
        });
        expect(unknown.text).toMatch(
          /^invalid-input: message.type "shutdown" is not a message type; use one of text|shutdown_request, /,
        );
        const noTo = await callTool(worker, "send_message", { message: "hi" });
        expect(noTo.text).toMatch(/^invalid-input: to: /);
        expect((await lead.readInbox()).envelopes).toEqual([]);
      });

      it("a message string that is a typed message in JSON is refused, not sent as text", async () => {
        const { lead, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        const json = await callTool(worker, "send_message", {
          to: "team-lead",
          message: JSON.stringify({ type: "task_claim_request", task_id: "t-1" }),
        });
        expect(json.isError).toBe(true);
        expect(json.text).toMatch(
          /^invalid-input: message is a JSON string; pass the object \(message: \{ "type": "task_claim_request", task_id, note\? \}\)/,
        );
        // Plain text that happens to be JSON without a message type is still text.
        const text = await callTool(worker, "send_message", {
          to: "team-lead",
          message: '{"note": "just data"}',
        });
        expect(text.isError, text.text).toBeFalsy();
        const inbox = (await lead.readInbox()).envelopes;
        expect(inbox.map((e) => e.message?.kind.case)).toEqual(["text"]);
      });

      it("whoami, and list_members marks the caller; enum values are words", async () => {
        const { token, name } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        const me = await callTool(worker, "whoami");
        oneStyle(me);
        expect(me.structuredContent).toMatchObject({
          team: name,
          name: "worker",
          role: "teammate",
          permission_mode: "default",
          lead: "team-lead",
        });
        expect(me.text).toBe(
          `You are worker, a teammate of team "${name}", permission mode default. The lead is team-lead.`,
        );
        // Its whoami was a call through MCP: list_members shows it online, seen via mcp (or
        // via stream, the inbox stream `team mcp` holds open to push messages).
        const members = await eventually(async () => {
          const listed = await callTool(worker, "list_members");
          expect(listed.text).toMatch(
            /\nworker: teammate, active, mode default, online, last seen \S+ via (mcp|stream) \(you\)$/,
          );
          return listed;
        });
        oneStyle(members);
        expect(members.structuredContent).toMatchObject({
          you: "worker",
          members: [
            { name: "team-lead", role: "lead", status: "active", permission_mode: "default" },
            { name: "worker", role: "teammate", you: true, presence: "online" },
          ],
        });
      });

      it("answers name their task and request; a handoff's accept reads accepted; one output style", async () => {
        const { lead, worker, leadToken, token } = await team();
        const helperToken = (await lead.addMember("helper")).token;
        const mcpWorker = await connectMcp(way, env().server.url, token);
        const mcpLead = await connectMcp(way, env().server.url, leadToken);
        const mcpHelper = await connectMcp(way, env().server.url, helperToken);
        const claim = await callTool(mcpWorker, "send_message", {
          to: "team-lead",
          message: { type: "task_claim_request", task_id: "t-1" },
        });
        oneStyle(claim);
        expect(claim.text).toContain("opened request req_");
        expect(claim.text).toContain('(task "t-1")');
        const claimId = (claim.structuredContent as { request_id: string }).request_id;
        const approved = await callTool(mcpLead, "send_message", {
          to: "worker",
          message: { type: "task_claim_response", request_id: claimId, approve: true },
        });
        oneStyle(approved);
        expect(approved.text).toContain(
          `It answers task_claim request ${claimId} (task "t-1"), now approved.`,
        );
        expect(approved.structuredContent).toMatchObject({ task_id: "t-1" });

        const told = await callTool(mcpWorker, "wait_for_messages", { timeout_seconds: 5 });
        oneStyle(told);
        expect(told.text).toContain(
          `team-lead approved your claim of task "t-1" (request ${claimId})`,
        );
        expect(told.text).toContain('result_signoff_request to "team-lead": { task_id: "t-1"');
        expect(told.text).not.toContain("task-id");
        expect(told.text).not.toContain("&lt;");
        expect(told.structuredContent).toMatchObject({
          messages: [
            {
              from: "team-lead",
              request_id: claimId,
              task_id: "t-1",
              message: { type: "task_claim_response", request_id: claimId, approve: true },
            },
          ],
        });

        const handoff = await worker.handOffTask("t-1", "helper", "half done");
        await callTool(mcpHelper, "send_message", {
          to: "worker",
          message: { type: "task_handoff_response", request_id: handoff.requestId, accept: true },
        });
        const got = await callTool(mcpWorker, "get_request", { request_id: handoff.requestId });
        oneStyle(got);
        expect(got.text).toMatch(/status {3}accepted/);
        expect(got.text).toContain("task     t-1");
        expect(got.structuredContent).toMatchObject({
          request: {
            request_id: handoff.requestId,
            kind: "task_handoff",
            status: "approved",
            request: { type: "task_handoff_request", task_id: "t-1", note: "half done" },
            response: { type: "task_handoff_response", accept: true },
          },
        });
        const list = await callTool(mcpWorker, "list_requests", { kind: "task_handoff" });
        oneStyle(list);
        expect(list.text).toContain(
          `${handoff.requestId} task_handoff worker → helper accepted (task "t-1")`,
        );
        const journal = await callTool(mcpWorker, "journal", {});
        oneStyle(journal);
        for (const tool of ["list_tasks", "get_task"] as const) {
          const r = await callTool(mcpWorker, tool, tool === "get_task" ? { taskId: "t-1" } : {});
          expect(r.isError, r.text).toBeFalsy();
          oneStyle(r);
        }
      });

      it("wait_for_messages: at most 25 s by default, 'nothing yet; call again'; a request answered elsewhere is not asked again", async () => {
        const { lead, worker, leadToken } = await team();
        const mcpLead: Client = await connectMcp(way, env().server.url, leadToken);
        const tool = (await mcpLead.listTools()).tools.find((t) => t.name === "wait_for_messages");
        expect(JSON.stringify(tool?.inputSchema)).toContain("default 25,");
        const none = await callTool(mcpLead, "wait_for_messages", { timeout_seconds: 0 });
        expect(none.text).toBe(
          "Nothing yet: no message arrived within 0 s. Call wait_for_messages again to keep waiting.",
        );
        oneStyle(none);

        const plan = await worker.submitPlan("1. tests");
        await lead.approvePlan(plan.requestId); // the lead answers in the console or the CLI
        const later = await callTool(mcpLead, "wait_for_messages", { timeout_seconds: 0 });
        expect(later.text).toContain(plan.requestId);
        expect(later.text).toContain("This request is no longer pending: it is approved.");
        expect(later.text).not.toContain("Answer it (exactly once)");
      });
    });
  }
});
