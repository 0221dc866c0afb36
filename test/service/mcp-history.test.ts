import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";

/**
 * The history tools through the MCP SDK's own Client (over /mcp): a reply with reply_to,
 * search_messages finding it with its thread, get_thread reading the thread, and a refusal
 * as an isError result naming the field.
 */
describeEachDatabase("MCP: search_messages, get_thread, reply_to", (env) => {
  it("replies in a thread, finds it, and reads the thread", async () => {
    const url = env().server.url;
    const anon = createTeamClient({ baseUrl: url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const alice = await lead.addMember("alice");
    await lead.sendText("alice", "is the quokka parser done?");
    const asked = (await lead.withToken(alice.token).readInbox()).envelopes[0];
    const a = await connectMcp("http", url, alice.token);

    const replied = await callTool(a, "send_message", {
      to: "team-lead",
      message: "the quokka parser is done",
      reply_to: asked?.id,
    });
    expect(replied.isError, replied.text).toBeFalsy();

    const found = await callTool(a, "search_messages", { query: "quokka" });
    expect(found.isError, found.text).toBeFalsy();
    expect(found.text).toMatch(/^2 found:/);
    expect(found.text).toContain("«quokka»");
    expect(found.text).toContain(`reply to ${asked?.id}`);
    const hits = (found.structuredContent as { hits: { thread_id: string }[] }).hits;
    expect(new Set(hits.map((h) => h.thread_id))).toEqual(new Set([asked?.threadId]));

    const thread = await callTool(a, "get_thread", { thread_id: asked?.threadId });
    expect(thread.isError, thread.text).toBeFalsy();
    const lines = thread.text.split("\n");
    expect(lines[0]).toBe(`Thread ${asked?.threadId}, 2 messages:`);
    expect(lines[1]).toContain("is the quokka parser done?");
    expect(lines[2]).toContain("the quokka parser is done");

    const bad = await callTool(a, "search_messages", { query: "x".repeat(1025) });
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(/^size-shape: query is longer than 1024 bytes \(field: query\)/);
  });
});
