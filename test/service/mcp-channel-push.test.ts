import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient, toPromptText } from "../../client/index.js";
import { type ChannelEventSeen, collectChannelEvents } from "../support/channel-events.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";

/** Polls `check` until it holds (the push is asynchronous), at most `ms`. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `team mcp` pushes the member's inbox as Claude Code channel events
 * (`notifications/claude/channel`), seen here by the MCP SDK's own Client as Claude Code's
 * listener would see them.
 */
describeEachDatabase("MCP: channel push (team mcp)", (env) => {
  async function team(): Promise<{ lead: TeamClient; worker: TeamClient; token: string }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const token = (await lead.addMember("worker")).token;
    return { lead, worker: lead.withToken(token), token };
  }
  async function bridge(token: string, args: string[] = []) {
    let events: ChannelEventSeen[] = [];
    const client: Client = await connectMcp("stdio", env().server.url, token, {
      args,
      beforeConnect: (c) => {
        events = collectChannelEvents(c);
      },
    });
    return { client, events };
  }

  it("declares claude/channel and tells the model what the events are and how to answer each kind", async () => {
    const { token } = await team();
    const { client } = await bridge(token);
    expect(client.getServerCapabilities()?.experimental?.["claude/channel"]).toEqual({});
    const instructions = client.getInstructions() ?? "";
    expect(instructions).toContain('<channel source="team"');
    expect(instructions).toContain("answer it once with send_message");
    expect(instructions).toContain("request_update");
    // Every kind an event may carry is named, the permission prompts included.
    for (const kind of [
      "shutdown_request",
      "plan_approval_request",
      "task_claim_request",
      "task_handoff_request",
      "result_signoff_request",
      "permission_request",
      "permission_relay",
      "task_notification",
    ]) {
      expect(instructions, kind).toContain(kind);
    }
  });

  it("pushes the backlog at start, then each new message: content as toPromptText, meta as plain strings", async () => {
    const { lead, worker, token } = await team();
    await lead.sendText("worker", "read the spec first");
    const { client, events } = await bridge(token);
    await until("the backlog", () => events.length === 1);
    const asked = await lead.requestShutdown("worker", { reason: "done for today" });
    await until("the live message", () => events.length === 2);

    const envelopes = (await worker.readInbox()).envelopes;
    expect(events.map((e) => e.content)).toEqual(envelopes.map((e) => toPromptText(e)));
    expect(events[0]?.meta).toEqual({ from: "team-lead", seq: "1", kind: "text" });
    expect(events[1]?.meta).toEqual({
      from: "team-lead",
      seq: "2",
      kind: "shutdown_request",
      request_id: asked.requestId,
    });
    expect(events[1]?.content).toContain(
      `shutdown_response to "team-lead": { request_id: "${asked.requestId}", approve: true }`,
    );
    // Meta keys are what Claude Code accepts as attributes (identifiers), values strings.
    for (const e of events) {
      for (const [k, v] of Object.entries(e.meta)) {
        expect(k).toMatch(/^[a-zA-Z_][a-zA-Z0-9_]*$/);
        expect(typeof v).toBe("string");
      }
    }
    // Default mode: pushed, not acked; wait_for_messages (or a hook) still hands them over.
    expect((await worker.readInbox()).ackedSeq).toBe(0n);
    const waited = await callTool(client, "wait_for_messages", { timeout_seconds: 0 });
    expect(waited.text).toContain("read the spec first");
  });

  it("--push-ack: each message acked once its event was written; wait_for_messages does not return it again", async () => {
    const { lead, worker, token } = await team();
    await lead.sendText("worker", "one");
    const { client, events } = await bridge(token, ["--push-ack"]);
    await lead.sendText("worker", "two");
    await until("both events", () => events.length === 2);
    await until("the ack", async () => (await worker.readInbox()).ackedSeq === 2n);
    const waited = await callTool(client, "wait_for_messages", { timeout_seconds: 0 });
    expect(waited.text).not.toContain("one");
    expect(waited.text).not.toContain("two");
  });

  it("--no-push: no capability, no events, the inbox untouched", async () => {
    const { lead, worker, token } = await team();
    await lead.sendText("worker", "hello");
    const { client, events } = await bridge(token, ["--no-push"]);
    expect(client.getServerCapabilities()?.experimental?.["claude/channel"]).toBeUndefined();
    expect(client.getInstructions()).not.toContain("<channel");
    await lead.sendText("worker", "again");
    await callTool(client, "list_members");
    await new Promise((r) => setTimeout(r, 500));
    expect(events).toEqual([]);
    expect((await worker.readInbox()).envelopes).toHaveLength(2);
  });

  describe("pushed twice across a restart", () => {
    it("a request answered meanwhile is pushed again as no longer pending", async () => {
      const { lead, worker, token } = await team();
      const asked = await lead.requestShutdown("worker");
      const first = await bridge(token);
      await until("the request", () => first.events.length === 1);
      await first.client.close();
      await worker.rejectShutdown(asked.requestId, "busy");
      const second = await bridge(token);
      await until("the request again", () => second.events.length >= 1);
      expect(second.events[0]?.meta.request_id).toBe(asked.requestId);
      expect(second.events[0]?.content).toContain("no longer pending: it is rejected");
      expect(second.events[0]?.content).not.toContain("approve: true }");
    });
  });
});
