import { expect, it } from "vitest";
import { describeEachDatabase } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";
import { eventually } from "../support/wait.js";

/**
 * /mcp reuses each member's built MCP servers between requests (mcp-server-pool.ts): a reused
 * server acts only with the token of the request it serves now, only for the identity it was
 * built for, and only for one request at a time.
 */
describeEachDatabase("MCP: reused servers of /mcp", (env) => {
  /** A raw tools/call over /mcp, answered with its status and its result's text. */
  const post = async (token: string, id: number, name: string) => {
    const res = await fetch(`${env().server.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name, arguments: {} },
      }),
    });
    const body = (await res.json()) as {
      id?: number;
      result?: { isError?: boolean; content: { text: string }[] };
    };
    const text = body.result?.content.map((c) => c.text).join("\n") ?? JSON.stringify(body);
    return { status: res.status, id: body.id, isError: body.result?.isError === true, text };
  };

  it("after a token is rotated the old one is refused and the new one is served, acting with the new token", async () => {
    const t = await env().team("alice");
    const old = t.member("alice").token;
    // Several calls at once: the member has several idle servers from now on.
    const before = await Promise.all([1, 2, 3].map((id) => post(old, id, "list_members")));
    for (const r of before) expect(r.isError, r.text).toBe(false);
    const rotated = await t.member("alice").client.rotateToken({});
    const refused = await post(old, 4, "list_members");
    expect(refused.status).toBe(401);
    expect(refused.text).toContain("unauthenticated");
    // The SDK's own client with the new token: a reused server whose tool calls still carried
    // the old token would have them refused Unauthenticated.
    const alice = await connectMcp("http", env().server.url, rotated.token);
    for (let i = 0; i < 4; i++) {
      const members = await callTool(alice, "list_members");
      expect(members.isError, members.text).toBeFalsy();
      expect(members.text).toContain("alice");
    }
    const me = await callTool(alice, "whoami");
    expect(me.isError, me.text).toBeFalsy();
    expect(me.text).toContain("alice");
  });

  it("a removed member's token is refused though its servers were kept", async () => {
    const t = await env().team("alice", "bob");
    const bob = t.member("bob").token;
    expect((await post(bob, 1, "list_members")).isError).toBe(false);
    await t.lead.removeMember({ name: "bob" });
    const refused = await post(bob, 2, "list_members");
    expect(refused.status).toBe(401);
    expect(refused.text).toContain("unauthenticated");
    // Another member of the team is still served.
    const alice = await post(t.member("alice").token, 3, "whoami");
    expect(alice.isError, alice.text).toBe(false);
  });

  it("list_members over /mcp shows a member added at once, and one removed as stopped at once, though the caller's servers were kept", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").token;
    // Several at once: alice's servers are kept idle from now on.
    const before = await Promise.all([1, 2, 3].map((id) => post(alice, id, "list_members")));
    for (const r of before) {
      expect(r.isError, r.text).toBe(false);
      expect(r.text).not.toContain("carol");
    }
    await t.lead.addMember({ name: "carol" });
    const added = await post(alice, 4, "list_members");
    expect(added.isError, added.text).toBe(false);
    expect(added.text).toMatch(/^carol: teammate, active,/m);
    await t.lead.removeMember({ name: "carol" });
    const removed = await post(alice, 5, "list_members");
    expect(removed.isError, removed.text).toBe(false);
    // Listed still (ListMembers shows stopped members), as stopped.
    expect(removed.text).toMatch(/^carol: teammate, stopped,/m);
    expect(removed.text).not.toMatch(/^carol: teammate, active,/m);
  });

  it("one member's requests at once, all with the same JSON-RPC id, each get their own answer", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").token;
    // Every client numbers its requests from the same start: a server serving two POSTs at
    // once would mix up answers of equal ids.
    const tools = Array.from({ length: 16 }, (_, i) => (i % 2 ? "whoami" : "list_members"));
    // list_members shows when alice was last seen: her first call's sighting is written
    // before the batch, so that every answer of the batch reads the same.
    await eventually(async () => {
      expect((await post(alice, 1, "list_members")).text).toMatch(/alice: [^\n]* via mcp/);
    });
    const answers = await Promise.all(tools.map((name) => post(alice, 1, name)));
    answers.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.id).toBe(1);
      expect(r.isError, r.text).toBe(false);
      expect(r.text).toContain(tools[i] === "whoami" ? "You are alice" : "team-lead: lead");
    });
    // Each answer is its own tool's, all of one tool alike.
    const whoami = answers.filter((_, i) => tools[i] === "whoami").map((r) => r.text);
    const listed = answers.filter((_, i) => tools[i] === "list_members").map((r) => r.text);
    expect(new Set(whoami).size).toBe(1);
    expect(new Set(listed).size).toBe(1);
    expect(whoami[0]).not.toBe(listed[0]);
  });
});
