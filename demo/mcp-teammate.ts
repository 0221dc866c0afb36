import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { TeammateLine } from "./transcript.js";

/**
 * carol, the demo's MCP teammate: what an LLM agent does through the MCP tools, scripted.
 * She talks to the team only through `team mcp` (the SDK's own Client over stdio, the way
 * Claude Code would): reads with wait_for_messages, writes docs on the welcome and reports
 * the task, accepts the e2e suite bob hands her (get_request shows which task, get_task
 * that it is hers), runs it and reports it, approves the shutdown request, then checks that
 * her next tool call is refused because her token is revoked. Exits 0 only if all of that
 * happened.
 */
const say = (text: string) => {
  const line: TeammateLine = { at: Date.now(), text };
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

interface Received {
  seq: string;
  from: string;
  request_id?: string;
  /** In the shape send_message takes: { type: "shutdown_request", reason }. */
  message: { type: string };
}

/** What get_request returns for a handoff: the request as asked. */
interface HandoffRecord {
  request: { type: "task_handoff_request"; task_id: string };
}

const client = new Client({ name: "demo-carol", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: ["bin/team.js", "mcp"],
    env: {
      PATH: process.env.PATH ?? "",
      TEAM_URL: process.env.TEAM_URL ?? "",
      TEAM_TOKEN: process.env.TEAM_TOKEN ?? "",
    },
  }),
);
const call = async (name: string, args: Record<string, unknown> = {}) => {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  return { ...r, text };
};
const tools = (await client.listTools()).tools.map((t) => t.name);
say(`connected over MCP (team mcp); tools: ${tools.join(", ")}`);

let exitCode = 1;
try {
  for (let done = false; !done; ) {
    const got = await call("wait_for_messages", { timeout_seconds: 60 });
    if (got.isError) throw new Error(got.text);
    for (const m of (got.structuredContent as { messages: Received[] }).messages) {
      const type = m.message.type;
      say(`← wait_for_messages: #${m.seq} ${type} from ${m.from}`);
      if (type === "text" && m.from === "team-lead") {
        say("writing the docs");
        const sent = await call("send_message", {
          to: "team-lead",
          message: {
            type: "task_notification",
            task_id: "docs",
            status: "completed",
            description: "document the new parser flag",
            result: "README: --new-parser documented with an example",
          },
        });
        if (sent.isError) throw new Error(sent.text);
        say(`reported task docs: completed (${sent.text})`);
      } else if (type === "task_handoff_request") {
        const asked = await call("get_request", { request_id: m.request_id });
        if (asked.isError) throw new Error(asked.text);
        const taskId = (asked.structuredContent as { request: HandoffRecord }).request.request
          .task_id;
        const accepted = await call("send_message", {
          to: m.from,
          message: { type: "task_handoff_response", request_id: m.request_id, accept: true },
        });
        if (accepted.isError) throw new Error(accepted.text);
        const task = await call("get_task", { task_id: taskId });
        if (task.isError) throw new Error(task.text);
        say(
          `accepted ${taskId} from ${m.from}; get_task: ${task.text
            .split("\n")
            .filter((line) => /^(task|status|owner)\b/.test(line))
            .join(", ")}`,
        );
        const reported = await call("send_message", {
          to: "team-lead",
          message: {
            type: "task_notification",
            task_id: taskId,
            status: "completed",
            description: "run the e2e suite",
            result: "17 passed in a real browser (new parser on)",
          },
        });
        if (reported.isError) throw new Error(reported.text);
        say(`reported task ${taskId}: completed`);
      } else if (type === "shutdown_request") {
        const answered = await call("send_message", {
          to: "team-lead",
          message: { type: "shutdown_response", request_id: m.request_id, approve: true },
        });
        if (answered.isError) throw new Error(answered.text);
        say(`approved shutdown ${m.request_id}`);
        done = true;
        break;
      }
    }
  }
  const after = await call("list_members");
  say(`next tool call: ${after.isError ? "refused" : "accepted"}: ${after.text}`);
  if (after.isError && after.text.includes("token revoked")) exitCode = 0;
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
} finally {
  await client.close();
}
process.exitCode = exitCode;
