/**
 * idle-connections: 20,000 idle connections from two child processes (bench/hostile-idle-
 * holder.ts): 10,000 HTTP/2 that answer PINGs and say nothing, 5,000 TCP that never send a
 * byte, 5,000 HTTP/1.1 keep-alive that made one request and went quiet; the server at its
 * defaults (MAX_CONNECTIONS 10,000, IDLE_CONNECTION_TIMEOUT_MS 5 min, HEADERS_TIMEOUT_MS 10 s,
 * HTTP/1.1 keep-alive 5 s). Meanwhile a fresh ListMembers on a new connection every 500 ms
 * (5 s budget each): how many were answered. Figures: that, how many held connections the
 * server closed, what /metrics counted, the server's RSS.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { TeamService } from "../gen/team/v1/team_service_pb.js";
import { sleep } from "./bounded.js";
import { as } from "./connections.js";
import { type HostileRun, hostileTeam, log, mib, percentile, seconds } from "./hostile-common.js";

const HOLDERS = [
  { kind: "h2", count: 10_000 },
  { kind: "tcp", count: 5_000 },
  { kind: "h1", count: 5_000 },
] as const;
const HOLD_AFTER_FILL_MS = 30_000;
const holderFile = fileURLToPath(new URL("./hostile-idle-holder.ts", import.meta.url));

interface HolderState {
  opened: number;
  closed: number;
  failed: number;
  filled?: boolean;
}

function startHolder(kind: string, count: number, url: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", holderFile, kind, String(count), url],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const state: HolderState = { opened: 0, closed: 0, failed: 0 };
  let buffer = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    for (const line of lines) if (line) Object.assign(state, JSON.parse(line));
  });
  return {
    kind,
    count,
    state,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
      }),
  };
}

/** team_refusals_total of one rule, from the server's /metrics. */
async function refusals(url: string, rule: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith("team_refusals_total") && l.includes(`rule="${rule}"`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

export async function idleConnections(run: HostileRun): Promise<string[]> {
  const server = await run.start({});
  const team = await hostileTeam(server);
  const rss0 = await server.rssBytes();
  // Each sample a new connection (no session manager kept between them): a fresh client.
  const fresh = async (): Promise<number | undefined> => {
    const client = createClient(TeamService, createGrpcTransport({ baseUrl: server.url }));
    const t0 = performance.now();
    try {
      await client.listMembers({}, as(team.lead.token, { timeoutMs: 5_000 }));
      return performance.now() - t0;
    } catch {
      return undefined;
    }
  };
  const holders = HOLDERS.map((h) => startHolder(h.kind, h.count, server.url));
  const answered: number[] = [];
  let total = 0;
  let rssPeak = rss0;
  const t0 = performance.now();
  let filledAt: number | undefined;
  try {
    while (filledAt === undefined || performance.now() - filledAt < HOLD_AFTER_FILL_MS) {
      total++;
      const ms = await fresh();
      if (ms !== undefined) answered.push(ms);
      if (total % 10 === 0) {
        rssPeak = Math.max(rssPeak, await server.rssBytes());
        log(holders.map((h) => `${h.kind} ${JSON.stringify(h.state)}`).join("; "));
      }
      if (filledAt === undefined && holders.every((h) => h.state.filled)) {
        filledAt = performance.now();
      }
      if (performance.now() - t0 > 300_000) break;
      await sleep(500);
    }
    rssPeak = Math.max(rssPeak, await server.rssBytes());
    const evicted = await refusals(server.url, "max-connections-evicted");
    const refused = await refusals(server.url, "max-connections");
    const idleClosed = await refusals(server.url, "idle-connection");
    return [
      `${HOLDERS.map((h) => `${h.count} ${h.kind}`).join(" + ")} idle connections, filled in ` +
        `${filledAt === undefined ? "(not filled)" : seconds(filledAt - t0)}, held ` +
        `${seconds(HOLD_AFTER_FILL_MS)} more: fresh calls answered ${answered.length}/${total} ` +
        `(median ${percentile(answered, 0.5).toFixed(0)} ms, longest ` +
        `${Math.max(...answered).toFixed(0)} ms)`,
      `held connections: ${holders
        .map(
          (h) =>
            `${h.kind} ${h.state.opened} opened, ${h.state.closed} closed by the server, ${h.state.failed} refused or failed`,
        )
        .join("; ")}`,
      `server counted max-connections-evicted ${evicted}, max-connections ${refused}, ` +
        `idle-connection ${idleClosed}; RSS ${mib(rss0)} -> peak ${mib(rssPeak)} (+${mib(rssPeak - rss0)})`,
    ];
  } finally {
    await Promise.all(holders.map((h) => h.stop()));
  }
}
