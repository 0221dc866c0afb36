import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { expect, it } from "vitest";
import { describeEachDatabase } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";

/**
 * /mcp speaks Streamable HTTP as the MCP SDK's StreamableHTTPServerTransport does in its
 * stateless, JSON-response mode (json-request-transport.ts stands in for it): the SDK's
 * `Client` works, and each malformed POST gets the SDK's status, code and sentence.
 */
describeEachDatabase("MCP: /mcp's HTTP transport", (env) => {
  const post = async (
    token: string,
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; type: string | null; json: unknown }> => {
    const res = await fetch(`${env().server.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${token}`,
        ...headers,
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get("content-type"),
      json: text ? JSON.parse(text) : undefined,
    };
  };
  const call = (id: number, name: string) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: {} },
  });
  const refusal = (code: number, message: string) => ({
    jsonrpc: "2.0",
    error: { code, message },
    id: null,
  });

  it("the SDK's Client: initialize, tools, prompts, ping, and several calls over one transport", async () => {
    const t = await env().team("alice");
    const client = await connectMcp("http", env().server.url, t.member("alice").token);
    expect(client.getServerVersion()?.name).toBe("team-protocols");
    expect(client.getInstructions()).toContain('You are "alice"');
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain("wait_for_messages");
    expect((await client.listPrompts()).prompts.length).toBeGreaterThan(0);
    await client.ping();
    for (let i = 0; i < 3; i++) {
      expect((await callTool(client, "whoami")).text).toContain("You are alice");
    }
  });

  it("a batch of requests is answered with an array, each answer under its own id; an unknown method is a JSON-RPC error", async () => {
    const t = await env().team("alice");
    const token = t.member("alice").token;
    const batch = await post(token, [
      call(7, "whoami"),
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: "x", method: "no/such/method" },
    ]);
    expect(batch.status).toBe(200);
    expect(batch.type).toContain("application/json");
    const answers = batch.json as { id: unknown; result?: unknown; error?: { code: number } }[];
    expect(answers).toHaveLength(2);
    const byId = new Map(answers.map((a) => [a.id, a]));
    expect(JSON.stringify(byId.get(7)?.result)).toContain("You are alice");
    expect(byId.get("x")?.error).toEqual({ code: -32601, message: "Method not found" });
    const single = await post(token, call(8, "whoami"));
    expect(Array.isArray(single.json)).toBe(false);
    expect(single.json).toMatchObject({ jsonrpc: "2.0", id: 8 });
  });

  it("notifications alone are accepted with 202 and no body", async () => {
    const t = await env().team("alice");
    const token = t.member("alice").token;
    const one = await post(token, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(one).toEqual({ status: 202, type: null, json: undefined });
    const two = await post(token, [
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } },
    ]);
    expect(two.status).toBe(202);
  });

  it("a malformed POST gets the SDK transport's status, code and sentence", async () => {
    const t = await env().team("alice");
    const token = t.member("alice").token;
    expect(await post(token, call(1, "whoami"), { accept: "application/json" })).toMatchObject({
      status: 406,
      json: refusal(
        -32000,
        "Not Acceptable: Client must accept both application/json and text/event-stream",
      ),
    });
    expect(await post(token, call(1, "whoami"), { "content-type": "text/plain" })).toMatchObject({
      status: 415,
      json: refusal(-32000, "Unsupported Media Type: Content-Type must be application/json"),
    });
    expect(
      await post(token, call(1, "whoami"), { "content-type": "application/json; charset=utf-8" }),
    ).toMatchObject({ status: 200 });
    expect(await post(token, { jsonrpc: "2.0", nothing: true })).toMatchObject({
      status: 400,
      json: refusal(-32700, "Parse error: Invalid JSON-RPC message"),
    });
    expect(await post(token, [call(1, "whoami"), 42])).toMatchObject({
      status: 400,
      json: refusal(-32700, "Parse error: Invalid JSON-RPC message"),
    });
    const many = Array.from({ length: 101 }, (_, i) => call(i, "whoami"));
    expect(await post(token, many)).toMatchObject({
      status: 400,
      json: refusal(-32600, "Invalid Request: Batch must not exceed 100 messages"),
    });
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      },
    };
    expect(await post(token, [init, call(2, "whoami")])).toMatchObject({
      status: 400,
      json: refusal(-32600, "Invalid Request: Only one initialization request is allowed"),
    });
    const version = await post(token, call(1, "whoami"), { "mcp-protocol-version": "1999-01-01" });
    expect(version.status).toBe(400);
    expect((version.json as { error: { message: string } }).error.message).toMatch(
      /^Bad Request: Unsupported protocol version: 1999-01-01 \(supported versions: /,
    );
    // An initialize names its version in the body; the header is not checked then.
    expect(await post(token, init, { "mcp-protocol-version": "1999-01-01" })).toMatchObject({
      status: 200,
      json: { id: 1, result: { serverInfo: { name: "team-protocols" } } },
    });
  });
});
