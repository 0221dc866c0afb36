import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach } from "vitest";
import { repoRoot } from "./child-server.js";

/** How an MCP client reaches the team: `team mcp` over stdio, or the server's /mcp. */
export type McpWay = "stdio" | "http";
export const mcpWays: McpWay[] = ["stdio", "http"];

const open = new Set<Client>();
afterEach(async () => {
  for (const c of open) await c.close().catch(() => {});
  open.clear();
});

export interface ConnectOptions {
  /** More arguments of `team mcp` (stdio only), e.g. `--no-push`. */
  args?: string[];
  /** Runs before the handshake: a notification handler set here sees the first events. */
  beforeConnect?: (client: Client) => void;
}

/** The SDK's own Client, connected as the member `token` belongs to. */
export async function connectMcp(
  way: McpWay,
  url: string,
  token: string,
  options: ConnectOptions = {},
): Promise<Client> {
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  options.beforeConnect?.(client);
  const transport =
    way === "stdio"
      ? new StdioClientTransport({
          command: process.execPath,
          args: ["bin/team.js", "mcp", ...(options.args ?? [])],
          cwd: repoRoot,
          env: { PATH: process.env.PATH ?? "", TEAM_URL: url, TEAM_TOKEN: token },
          stderr: "pipe",
        })
      : new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        });
  await client.connect(transport);
  open.add(client);
  return client;
}

/** A tool call's result, with its text. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult & { text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  return { ...result, text };
}
