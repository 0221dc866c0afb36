import net from "node:net";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";
import { eventually } from "../support/wait.js";

/**
 * `team mcp` started while its server is down, or with a token the server refuses: it
 * serves anyway (a runtime whose MCP server exits shows the model nothing but a missing
 * tool), its tools answer with an isError result saying what is wrong and what to do, and
 * the first call after the server comes back runs on the member's own tools.
 */

const proxies = new Set<net.Server>();
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  for (const p of proxies) await new Promise((r) => p.close(() => r(undefined)));
  proxies.clear();
});

/** A port nothing listens on yet. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/** The server "comes back" on `port`: a TCP relay to the real one. */
async function serveOn(port: number, target: string): Promise<void> {
  const { port: targetPort, hostname } = new URL(target);
  const relay = net.createServer((socket) => {
    const upstream = net.connect(Number(targetPort), hostname);
    sockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on("error", end);
    upstream.on("error", end);
    socket.on("close", end);
    upstream.on("close", end);
  });
  proxies.add(relay);
  await new Promise<void>((r) => relay.listen(port, "127.0.0.1", r));
}

describeEachDatabase("MCP: a stdio bridge started without its server", (env) => {
  async function team() {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const token = (await lead.addMember("worker")).token;
    return { lead, leadToken: created.token, token };
  }

  it("the server down: tools listed, each call says it cannot reach it and sends nothing; once it is up, the member's own tools (the lead's, listed anew) work", async () => {
    const { lead, leadToken, token } = await team();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let listChanged = 0;
    const mcp = await connectMcp("stdio", url, leadToken, {
      beforeConnect: (c) =>
        c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          listChanged++;
        }),
    });
    expect(mcp.getInstructions()).toContain(`could not reach its team server at ${url}`);
    const before = (await mcp.listTools()).tools.map((t) => t.name);
    expect(before).toEqual(expect.arrayContaining(["send_message", "wait_for_messages", "whoami"]));
    // Not known to be the lead yet: the stand-ins are a teammate's tools.
    expect(before).not.toContain("add_member");

    const down = await callTool(mcp, "send_message", {
      to: "worker",
      message: "sent while down",
    });
    expect(down.isError).toBe(true);
    expect(down.text).toMatch(
      new RegExp(
        `^unavailable: the team server at ${url} cannot be reached \\(.+\\)\\. Nothing was sent\\.`,
      ),
    );
    expect(down.text).toContain("tries again on every call");

    await serveOn(port, env().server.url);
    const who = await callTool(mcp, "whoami");
    expect(who.isError).toBeFalsy();
    expect(who.text).toContain("You are team-lead, the lead");
    await eventually(() => expect(listChanged).toBe(1));
    const after = (await mcp.listTools()).tools.map((t) => t.name);
    expect(after).toContain("add_member");
    const sent = await callTool(mcp, "send_message", {
      to: "worker",
      message: "sent once up",
    });
    expect(sent.isError, sent.text).toBeFalsy();
    // Only the message sent once the server was up reached the worker.
    const { envelopes } = await lead.withToken(token).readInbox();
    expect(envelopes.map((e) => e.message?.kind.value)).toEqual(["sent once up"]);
  });

  it("a token the server refuses: every call says so and that calling again will not help; nothing is sent", async () => {
    const { lead } = await team();
    const mcp = await connectMcp("stdio", env().server.url, "tp_not_a_real_token");
    const tools = (await mcp.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("send_message");
    for (const [name, args] of [
      ["whoami", {}],
      ["send_message", { to: "team-lead", message: "hello" }],
    ] as const) {
      const r = await callTool(mcp, name, args);
      expect(r.isError, name).toBe(true);
      expect(r.text, name).toMatch(
        new RegExp(
          `^unauthenticated: the team server at ${env().server.url} refuses this bridge's token \\(TEAM_TOKEN\\)`,
        ),
      );
      expect(r.text, name).toContain("Calling again will not help");
    }
    expect((await lead.readInbox()).envelopes).toEqual([]);
  });
});
