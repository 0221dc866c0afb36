/**
 * `list_members` over `/mcp` driven by h2load (a C load generator) instead of this process's
 * fetch loops: on 2 shared cores the Node client takes much of the CPU the server would use,
 * so the loops measure the pair; h2load's figure is what the server can answer. Skipped,
 * with a line saying so, when h2load is not installed.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { h2loadVersion, runH2load } from "./h2load/run.js";
import type { BenchServer } from "./server-process.js";

/**
 * HTTP/2 connections × streams each. One member's calls: up to 8 at once are served by its
 * pooled MCP servers (server/mcp/mcp-server-pool.ts); 4 × 8 shows what more costs.
 */
const SHAPES = [
  { connections: 8, streams: 1 },
  { connections: 16, streams: 1 },
  { connections: 4, streams: 2 },
  { connections: 4, streams: 8 },
];

export async function mcpCallsByH2load(
  server: BenchServer,
  token: string,
  seconds: number,
): Promise<string[]> {
  const signal = AbortSignal.timeout((seconds * SHAPES.length + 60) * 1000);
  try {
    await h2loadVersion(signal);
  } catch (e) {
    return [`h2load: skipped (${(e as Error).message})`];
  }
  const dir = await mkdtemp(join(os.tmpdir(), "tp-mcp-h2load-"));
  try {
    const bodyFile = join(dir, "list-members.json");
    await writeFile(
      bodyFile,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "list_members", arguments: {} },
      }),
    );
    const lines: string[] = [];
    for (const shape of SHAPES) {
      const cpu0 = (await server.cpuMs()) ?? 0;
      const summary = await runH2load({
        url: server.url,
        path: "/mcp",
        bodyFile,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${token}`,
        },
        ...shape,
        durationMs: seconds * 1000,
        signal,
      });
      const cpu = ((await server.cpuMs()) ?? 0) - cpu0;
      const answered = summary.status2xx;
      lines.push(
        `h2load ${shape.connections} × ${shape.streams}: ${summary.requestsPerSec} calls/s, ` +
          `${answered} of ${summary.total} answered 2xx, server CPU ` +
          `${answered > 0 ? (cpu / answered).toFixed(2) : "-"} ms per call, ` +
          `h2load's own CPU ${summary.cpuMs ?? "?"} ms`,
      );
    }
    return lines;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
