import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { expect, it } from "vitest";
import { z } from "zod";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { RequestKind, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { RequestRecord } from "../../gen/team/v1/records_pb.js";
import { type ChannelEventSeen, collectChannelEvents } from "../support/channel-events.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { connectMcp } from "../support/mcp-clients.js";

/** Polls `check` until it holds (the relay is asynchronous), at most `ms`. */
async function until<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  ms = 15_000,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The verdict Claude Code receives (its Channels reference: request_id, behavior). */
const verdictNotification = z.object({
  method: z.literal("notifications/claude/channel/permission"),
  params: z.object({ request_id: z.string(), behavior: z.enum(["allow", "deny"]) }),
});
type Verdict = z.infer<typeof verdictNotification>["params"];

/**
 * `team mcp` relays Claude Code's permission prompts to the lead: the MCP SDK's own Client
 * plays Claude Code (it sends `notifications/claude/channel/permission_request` as Claude Code
 * does for a channel that declared `claude/channel/permission`, and listens for the verdict).
 */
describeEachDatabase("MCP: permission prompts relayed to the lead (team mcp)", (env) => {
  async function team(): Promise<{ lead: TeamClient; token: string; leadToken: string }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const token = (await lead.addMember("worker")).token;
    return { lead, token, leadToken: created.token };
  }

  async function bridge(token: string, args: string[] = []) {
    const verdicts: Verdict[] = [];
    let events: ChannelEventSeen[] = [];
    const client: Client = await connectMcp("stdio", env().server.url, token, {
      args,
      beforeConnect: (c) => {
        events = collectChannelEvents(c);
        c.setNotificationHandler(verdictNotification, (n) => {
          verdicts.push(n.params);
        });
      },
    });
    return { client, verdicts, events: () => events };
  }

  /** Claude Code's prompt, as it relays one. */
  const prompt = (client: Client, requestId: string, toolName = "Bash") =>
    client.notification({
      method: "notifications/claude/channel/permission_request",
      params: {
        request_id: requestId,
        tool_name: toolName,
        description: "List the files",
        input_preview: '{"command":"ls -la"}',
      },
    });

  async function pendingPermission(lead: TeamClient): Promise<RequestRecord> {
    return until("the lead's permission request", async () => {
      const list = await lead.listRequests({ status: "pending", kind: "permission" });
      return list.requests[0];
    });
  }

  it("a teammate's bridge declares claude/channel/permission; --no-permission-relay and the lead's do not", async () => {
    const { token, leadToken } = await team();
    const { client } = await bridge(token);
    expect(client.getServerCapabilities()?.experimental).toMatchObject({
      "claude/channel": {},
      "claude/channel/permission": {},
    });
    const off = await bridge(token, ["--no-permission-relay"]);
    expect(off.client.getServerCapabilities()?.experimental?.["claude/channel/permission"]).toBe(
      undefined,
    );
    const noChannel = await bridge(token, ["--no-push"]);
    expect(noChannel.client.getServerCapabilities()?.experimental).toBeUndefined();
    const lead = await bridge(leadToken);
    expect(lead.client.getServerCapabilities()?.experimental?.["claude/channel/permission"]).toBe(
      undefined,
    );
    // Four bridges, each a Node process: slow on a loaded machine.
  }, 120_000);

  it("permission prompt in -> permission_request to the lead -> the lead allows -> verdict allow out", async () => {
    const { lead, token } = await team();
    const { client, verdicts } = await bridge(token);
    await prompt(client, "abcde");

    const r = await pendingPermission(lead);
    expect(r).toMatchObject({ kind: RequestKind.PERMISSION, from: "worker", to: "team-lead" });
    expect(r.request?.kind).toMatchObject({
      case: "permissionRequest",
      value: {
        toolName: "Bash",
        description: "List the files",
        inputPreview: '{"command":"ls -la"}',
        runtimeRequestId: "abcde",
      },
    });
    expect(verdicts).toEqual([]);

    await lead.send("worker", {
      kind: {
        case: "permissionResponse",
        value: { requestId: r.requestId, allow: true, reason: "" },
      },
    });
    expect(await until("the verdict", () => verdicts[0])).toEqual({
      request_id: "abcde",
      behavior: "allow",
    });
  });

  it("the lead denies with a reason -> verdict deny; two prompts in flight each get their own", async () => {
    const { lead, token } = await team();
    const { client, verdicts } = await bridge(token);
    await prompt(client, "fghij", "Write");
    await prompt(client, "kmnop", "Bash");
    const both = await until("both requests", async () => {
      const list = await lead.listRequests({ status: "pending", kind: "permission" });
      return list.requests.length === 2 ? list.requests : undefined;
    });
    const byRuntimeId = (id: string) =>
      both.find(
        (r) =>
          r.request?.kind.case === "permissionRequest" &&
          r.request.kind.value.runtimeRequestId === id,
      );
    const write = byRuntimeId("fghij");
    const bash = byRuntimeId("kmnop");
    await lead.send("worker", {
      kind: {
        case: "permissionResponse",
        value: { requestId: write?.requestId ?? "", allow: false, reason: "not in this repo" },
      },
    });
    await lead.send("worker", {
      kind: {
        case: "permissionResponse",
        value: { requestId: bash?.requestId ?? "", allow: true, reason: "" },
      },
    });
    await until("two verdicts", () => (verdicts.length === 2 ? true : undefined));
    expect([...verdicts].sort((a, b) => a.request_id.localeCompare(b.request_id))).toEqual([
      { request_id: "fghij", behavior: "deny" },
      { request_id: "kmnop", behavior: "allow" },
    ]);
  });

  it("an approver answers for the lead; the verdict comes back the same way", async () => {
    const { lead, token } = await team();
    const judge = lead.withToken((await lead.addMember("judge", { approver: true })).token);
    const { client, verdicts } = await bridge(token);
    await prompt(client, "qrstu");
    const r = await until("the request, as the approver sees it", async () => {
      const list = await judge.listRequests({ status: "pending", kind: "permission" });
      return list.requests[0];
    });
    await judge.send("worker", {
      kind: {
        case: "permissionResponse",
        value: { requestId: r.requestId, allow: true, reason: "" },
      },
    });
    expect(await until("the verdict", () => verdicts[0])).toEqual({
      request_id: "qrstu",
      behavior: "allow",
    });
    expect((await lead.getRequest(r.requestId)).answeredBy).toBe("judge");
  });

  it("a request canceled before an answer: no verdict; the model is told by a channel event", async () => {
    const { lead, token } = await team();
    const { client, verdicts, events } = await bridge(token);
    await prompt(client, "vwxyz");
    const r = await pendingPermission(lead);
    const worker = lead.withToken(token);
    await worker.cancelRequest(r.requestId);
    const told = await until("the relay's channel event", () =>
      events().find((e) => e.meta.kind === "permission_relay"),
    );
    expect(told.content).toContain("vwxyz");
    expect(told.content).toContain("canceled");
    expect(verdicts).toEqual([]);
    expect((await lead.getRequest(r.requestId)).status).toBe(RequestStatus.CANCELED);
  });
});
