/**
 * What one client can make the server hold, and what it costs: the hostile scenarios. The
 * server (as `npm start` runs it, a child process) is given small timeouts where a scenario
 * needs them, and each scenario says what held and with which figure. Not a test: nothing
 * here asserts; the figures go to bench/README.md.
 *
 *   npm run bench:hostile                       every scenario, embedded database
 *   npm run bench:hostile -- --pg               a scratch database on local PostgreSQL
 *                                               (--pg-url <admin url> to choose)
 *   npm run bench:hostile -- --only mcp-calls,mcp-waits --n 2000
 *   npm run bench:hostile -- --only mcp-calls --cpu-profile DIR   the server's V8 profile in DIR
 *
 * Scenarios: mcp-calls (list_members over /mcp, calls/s), mcp-waits (N concurrent
 * wait_for_messages of one token); the connection and stream limits, each in a file of its
 * own (bench/hostile-*.ts): idle-connections, unfinished-bodies, watch-observers.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sleep } from "./bounded.js";
import { Cleanups } from "./cleanup.js";
import { Connections } from "./connections.js";
import { createScratchDatabase, DEFAULT_PG_ADMIN_URL } from "./database-target.js";
import { limitScenarios } from "./hostile-limits.js";
import { mcpCallsByH2load } from "./hostile-mcp-h2load.js";
import { type BenchServer, startBenchServer } from "./server-process.js";
import { createBenchTeam } from "./teams.js";

const MiB = 1024 * 1024;
const log = (line: string) => process.stderr.write(`${line}\n`);
const ALL = ["mcp-calls", "mcp-waits", ...Object.keys(limitScenarios)];

interface Run {
  n: number;
  seconds: number;
  start(env: Record<string, string>): Promise<BenchServer>;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pg: { type: "boolean", default: false },
      "pg-url": { type: "string", default: DEFAULT_PG_ADMIN_URL },
      only: { type: "string", default: ALL.join(",") },
      n: { type: "string", default: "2000" },
      seconds: { type: "string", default: "5" },
      "cpu-profile": { type: "string" },
    },
  });
  const cleanups = new Cleanups();
  process.once("SIGINT", () => void cleanups.runAll(log).then(() => process.exit(130)));
  try {
    const pgUrl = values.pg
      ? await createScratchDatabase(values["pg-url"], "tp_hostile", cleanups)
      : undefined;
    const run: Run = {
      n: Number(values.n),
      seconds: Number(values.seconds),
      async start(env) {
        const dir = await mkdtemp(join(os.tmpdir(), "tp-hostile-"));
        cleanups.add("data dir", () => rm(dir, { recursive: true, force: true }));
        const server = await startBenchServer(
          { ...(pgUrl ? { DATABASE_URL: pgUrl } : { DATA_DIR: dir }), ...env },
          { cpuProfileDir: values["cpu-profile"] },
        );
        cleanups.add("server", () => server.stop());
        return server;
      },
    };
    log(`database: ${pgUrl ? "PostgreSQL (scratch)" : "embedded"}`);
    for (const name of (values.only ?? "").split(",")) {
      const scenario = scenarios[name];
      if (!scenario) throw new Error(`no scenario "${name}" (${ALL.join(", ")})`);
      log(`--- ${name}`);
      const lines = await scenario(run);
      for (const line of lines) console.log(`${name}: ${line}`);
      await cleanups.runAll(log);
    }
  } finally {
    await cleanups.runAll(log);
  }
}

/** A team with `teammates` teammates on a fresh server; tokens of the lead and the first mate. */
async function teamOn(server: BenchServer, teammates = 1) {
  const connections = new Connections(server.url, 1);
  await connections.open();
  const team = await createBenchTeam(
    connections,
    `hostile${Date.now()}`,
    "t",
    teammates,
    new AbortController().signal,
  );
  return { connections, team };
}

/** One JSON-RPC tools/call over /mcp (HTTP/1.1, fetch's keep-alive pool). */
async function mcpCall(
  url: string,
  token: string,
  id: number,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ isError: boolean; text: string }> {
  const res = await fetch(`${url}/mcp`, {
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
      params: { name, arguments: args },
    }),
    ...(signal ? { signal } : {}),
  });
  const body = (await res.json()) as {
    result?: { isError?: boolean; content: { text: string }[] };
  };
  return {
    isError: body.result?.isError === true,
    text: body.result?.content.map((c) => c.text).join("\n") ?? JSON.stringify(body),
  };
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;

const scenarios: Record<string, (run: Run) => Promise<string[]>> = {
  ...limitScenarios,
  /** list_members over /mcp, 8 closed loops: calls/s and server CPU per call. */
  async "mcp-calls"(run) {
    const server = await run.start({});
    const { team, connections } = await teamOn(server);
    connections.close();
    const token = team.lead.token;
    const loop = async (until: number) => {
      let n = 0;
      while (performance.now() < until) {
        const r = await mcpCall(server.url, token, n, "list_members", {});
        if (r.isError) throw new Error(r.text);
        n++;
      }
      return n;
    };
    await Promise.all(Array.from({ length: 8 }, () => loop(performance.now() + 1_000)));
    const cpu0 = (await server.cpuMs()) ?? 0;
    const t0 = performance.now();
    const counts = await Promise.all(
      Array.from({ length: 8 }, () => loop(t0 + run.seconds * 1000)),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpu = ((await server.cpuMs()) ?? 0) - cpu0;
    const calls = counts.reduce((a, b) => a + b, 0);
    return [
      `${(calls / seconds).toFixed(0)} calls/s (8 closed loops, ${seconds.toFixed(1)} s), ` +
        `server CPU ${(cpu / calls).toFixed(2)} ms per call`,
      ...(await mcpCallsByH2load(server, token, run.seconds)),
    ];
  },

  /** N concurrent wait_for_messages of one token: how many were refused, and RSS growth. */
  async "mcp-waits"(run) {
    const server = await run.start({});
    const { team, connections } = await teamOn(server);
    connections.close();
    const token = team.teammates[0]?.token as string;
    // A first call warms what every call shares.
    await mcpCall(server.url, token, 0, "wait_for_messages", { timeout_seconds: 0 });
    await sleep(500);
    const rss0 = await server.rssBytes();
    const holders = new AbortController();
    let refused = 0;
    let firstRefusal = "";
    const calls = Array.from({ length: run.n }, (_, i) =>
      mcpCall(
        server.url,
        token,
        i + 1,
        "wait_for_messages",
        { timeout_seconds: 60 },
        holders.signal,
      )
        .then((r) => {
          if (r.isError) {
            refused++;
            firstRefusal ||= r.text;
          }
        })
        .catch(() => {}),
    );
    await sleep(run.seconds * 1000);
    const rss1 = await server.rssBytes();
    holders.abort();
    await Promise.all(calls);
    // Admitted: at most MAX_MCP_WAITS_PER_MEMBER; the rest not yet answered were still on
    // their way (the client's pool, the server's accept queue) when RSS was read.
    return [
      `${run.n} concurrent waits of one token: ${refused} refused within ${run.seconds} s, ` +
        `${run.n - refused} not answered yet (at most 4 admitted); ` +
        `server RSS ${mib(rss0)} -> ${mib(rss1)} (+${mib(rss1 - rss0)})`,
      `refusal: ${firstRefusal.slice(0, 140)}`,
    ];
  },
};

await main();
