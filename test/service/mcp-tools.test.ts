import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { waitFor } from "../support/child-server.js";
import { runTeam } from "../support/cli.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp, mcpWays } from "../support/mcp-clients.js";

/**
 * The MCP tools' own behaviour: delivery, role-dependent listing, bad input, /mcp's 401s.
 * The server's limits over /mcp (send rate, body size) are in mcp-limits.test.ts.
 */
describeEachDatabase("MCP: tools", (env) => {
  async function team(): Promise<{ lead: TeamClient; leadToken: string; token: string }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const added = await lead.addMember("worker");
    return { lead, leadToken: created.token, token: added.token };
  }

  for (const way of mcpWays) {
    describe(way, () => {
      it("wait_for_messages: backlog first, then live, never twice, acked", async () => {
        const { lead, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        await lead.sendText("worker", "first");
        await lead.sendText("worker", "second");

        const backlog = await callTool(worker, "wait_for_messages", { timeout_seconds: 30 });
        expect(backlog.text.indexOf("first")).toBeGreaterThan(-1);
        expect(backlog.text.indexOf("second")).toBeGreaterThan(backlog.text.indexOf("first"));
        expect(backlog.structuredContent).toMatchObject({ count: 2, seqs: ["1", "2"] });

        // Sent while the call waits: delivered by its subscription (the hub has it open).
        const subscribers = env().app.hub.size;
        const waiting = callTool(worker, "wait_for_messages", { timeout_seconds: 300 });
        await waitFor("the live subscription", 20_000, () =>
          env().app.hub.size > subscribers ? true : undefined,
        );
        await lead.sendText("worker", "third");
        const live = await waiting;
        expect(live.structuredContent).toMatchObject({
          count: 1,
          messages: [{ seq: "3", from: "team-lead", message: { type: "text", text: "third" } }],
        });
        expect(live.text).toContain("third");

        // Nothing is returned twice, and what was returned is acked.
        const none = await callTool(worker, "wait_for_messages", { timeout_seconds: 0 });
        expect(none.structuredContent).toMatchObject({ count: 0, seqs: [] });
        const inbox = await lead.withToken(token).readInbox();
        expect(inbox.ackedSeq).toBe(3n);
        expect(inbox.envelopes).toEqual([]);
      });

      it("lists lead-only tools for the lead only; the server refuses them to a teammate", async () => {
        const { lead, leadToken, token } = await team();
        const asLead = await connectMcp(way, env().server.url, leadToken);
        const asWorker = await connectMcp(way, env().server.url, token);
        const names = async (c: typeof asLead) => (await c.listTools()).tools.map((t) => t.name);
        const common = [
          "send_message",
          "wait_for_messages",
          "list_members",
          "whoami",
          "get_request",
          "list_requests",
          "await_request",
          "cancel_request",
          "create_task",
          "update_task",
          "get_task",
          "list_tasks",
          "acquire_lease",
          "renew_lease",
          "release_lease",
          "list_leases",
          "search_messages",
          "get_thread",
          "journal",
        ];
        expect(await names(asLead)).toEqual([...common, "add_member", "remove_member"]);
        expect(await names(asWorker)).toEqual(common);

        // A hand-made call to a tool the teammate was not shown reaches the server, which refuses.
        const refused = await asWorker.request(
          { method: "tools/call", params: { name: "add_member", arguments: { name: "intruder" } } },
          CallToolResultSchema,
        );
        expect(refused.isError).toBe(true);
        expect(refused.content[0]).toMatchObject({
          text: "permission_denied: only the team lead may add members",
        });
        expect((await lead.members()).map((m) => m.name)).toEqual(["team-lead", "worker"]);

        const added = await callTool(asLead, "add_member", { name: "helper" });
        expect(added.isError, added.text).toBeFalsy();
        const { token: newToken, config } = added.structuredContent as {
          token: string;
          config: { mcpServers: { team: Record<string, unknown> } };
        };
        expect(added.text).toContain(newToken);
        const entry = config.mcpServers.team;
        if (way === "stdio") {
          // By absolute paths (node and the CLI this bridge runs), usable from any folder.
          expect(entry).toEqual({
            command: expect.stringMatching(/^\/.*node[^/]*$/),
            args: [expect.stringMatching(/^\/.*\/bin\.js$/), "mcp"],
            env: { TEAM_URL: env().server.url, TEAM_TOKEN: newToken },
          });
        } else {
          expect(entry).toEqual({
            type: "http",
            url: `${env().server.url}/mcp`,
            headers: { Authorization: `Bearer ${newToken}` },
          });
        }
        // The configuration works: the new member connects with it and sees itself.
        const helper = await connectMcp(way, env().server.url, newToken);
        expect((await callTool(helper, "list_members")).text).toContain("helper: teammate, active");
        const removed = await callTool(asLead, "remove_member", { name: "helper" });
        expect(removed.isError, removed.text).toBeFalsy();
      });

      it("prompts give the role's duties with the team's current members", async () => {
        const { leadToken, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        const asLead = await connectMcp(way, env().server.url, leadToken);
        // Each member is offered its own role's prompt only.
        expect((await worker.listPrompts()).prompts.map((p) => p.name)).toEqual(["teammate"]);
        expect((await asLead.listPrompts()).prompts.map((p) => p.name)).toEqual(["team-lead"]);
        const text = async (c: typeof worker, name: string) => {
          const content = (await c.getPrompt({ name })).messages[0]?.content;
          return content?.type === "text" ? content.text : "";
        };
        const mate = await text(worker, "teammate");
        expect(mate).toContain("You are worker, a teammate");
        expect(mate).toContain("- team-lead (lead, active)");
        expect(mate).toContain('{type: "shutdown_response", request_id, approve: true}');
        expect(mate).toContain('{type: "plan_approval_request", plan}');
        expect(mate).toContain(
          'Before you edit files, lease them: acquire_lease {resource: "src/parser/**", reason}',
        );
        // Every protocol a teammate takes part in, the task ones included.
        for (const type of [
          "task_notification",
          "task_claim_request",
          "result_signoff_request",
          "task_handoff_request",
          "task_handoff_response",
        ]) {
          expect(mate).toContain(`{type: "${type}"`);
        }
        const lead = await text(asLead, "team-lead");
        expect(lead).toContain("You are team-lead, the team lead");
        expect(lead).toContain("- worker (teammate, active)");
        expect(lead).toContain("release_lease {lease_id, reason}");
        for (const type of [
          "plan_approval_response",
          "shutdown_request",
          "task_claim_response",
          "task_assign",
          "result_signoff_response",
          "task_handoff_response",
        ]) {
          expect(lead).toContain(`{type: "${type}"`);
        }
      });

      it("journal, list_requests, await_request and cancel_request go to the server", async () => {
        const { token } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        const sent = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "plan_approval_request", plan: "a plan" },
        });
        const id = (sent.structuredContent as { request_id: string }).request_id;
        const pending = await callTool(worker, "list_requests", { status: "pending" });
        expect(pending.text).toContain(id);
        const canceled = await callTool(worker, "cancel_request", { request_id: id });
        expect(canceled.isError, canceled.text).toBeFalsy();
        const awaited = await callTool(worker, "await_request", { request_id: id });
        expect(awaited.structuredContent).toMatchObject({
          request: { request_id: id, kind: "plan_approval", status: "canceled" },
        });
        const journal = await callTool(worker, "journal", { outcome: "accepted" });
        expect(journal.text).toContain(id);
        const other = await callTool(worker, "journal", { member: "team-lead" });
        expect(other.isError).toBe(true);
        expect(other.text).toMatch(
          /^permission_denied: only the lead and observers see other members' attempts/,
        );
      });

      it("bad input is an isError result naming the field, and nothing is stored", async () => {
        const { lead, token } = await team();
        const worker = await connectMcp(way, env().server.url, token);
        const missing = await callTool(worker, "send_message", { message: "hi" });
        expect(missing.isError).toBe(true);
        expect(missing.text).toMatch(/^invalid-input: to: /);
        const unknownType = await callTool(worker, "send_message", {
          to: "team-lead",
          message: { type: "bogus" },
        });
        expect(unknownType.isError).toBe(true);
        expect(unknownType.text).toMatch(
          /^invalid-input: message.type "bogus" is not a message type; /,
        );
        const wrongType = await callTool(worker, "wait_for_messages", { timeout_seconds: "soon" });
        expect(wrongType.text).toMatch(/^invalid-input: timeout_seconds: /);
        const tooLong = await callTool(worker, "wait_for_messages", { timeout_seconds: 301 });
        expect(tooLong.text).toMatch(/^invalid-input: timeout_seconds: /);
        expect((await lead.readInbox()).envelopes).toEqual([]);
      });
    });
  }

  it("team mcp ends when its client closes stdin, even with a wait in flight", async () => {
    const { token } = await team();
    const lines = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "wait_for_messages", arguments: { timeout_seconds: 300 } },
      },
    ];
    const stdin = lines.map((l) => `${JSON.stringify(l)}\n`).join("");
    const run = await runTeam(["mcp"], { TEAM_URL: env().server.url, TEAM_TOKEN: token }, stdin);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('"serverInfo":{"name":"team-protocols"');
  });

  describe("/mcp's door", () => {
    const post = (headers: Record<string, string>, body = "{}") =>
      fetch(`${env().server.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body,
      });

    it("answers 401 with a clear message without a token or with a bad one", async () => {
      const none = await post({});
      expect(none.status).toBe(401);
      expect(await none.text()).toContain(
        "missing credentials: send the header `Authorization: Bearer <token>`",
      );
      const malformed = await post({ authorization: "Bearer nope" });
      expect(malformed.status).toBe(401);
      expect(await malformed.text()).toContain("malformed token");
      const unknown = await post({ authorization: `Bearer tp_${"a".repeat(43)}` });
      expect(unknown.status).toBe(401);
      expect(await unknown.text()).toContain("unknown token");
    });
  });
});
