/**
 * What one idle Subscribe stream keeps on the server's V8 heap, by kind of object: the real
 * server (a child process) is given a heap snapshot with no stream open and one with N idle
 * streams, and the difference is summed by object type and constructor, per stream. The
 * memory scenario says how much; this says what (e.g. that object literals with getters are
 * property dictionaries: server/grpc/call-objects.ts).
 *
 *   npm run bench:heap                 1,000 streams, over gRPC
 *   npm run bench:heap -- --streams 2000 --protocol connect
 *
 * Needs PostgreSQL (a scratch database, dropped at the end; --pg <admin url> to choose).
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { TeamService } from "../gen/team/v1/team_service_pb.js";
import { sleep } from "./bounded.js";
import { Cleanups } from "./cleanup.js";
import { as, Connections, type TeamClient } from "./connections.js";
import { createScratchDatabase, DEFAULT_PG_ADMIN_URL } from "./database-target.js";
import { serverBuild } from "./server-process.js";
import { type OpenStream, openStream } from "./subscriber.js";
import { type BenchMember, createBenchTeam, text } from "./teams.js";

const TEAM_SIZE = 500;
const WARMUP_STREAMS = 50;

interface Heap {
  /** Bytes and count of objects by "type: name". */
  byKind: Map<string, { bytes: number; count: number }>;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      streams: { type: "string", default: "1000" },
      protocol: { type: "string", default: "grpc" },
      pg: { type: "string", default: DEFAULT_PG_ADMIN_URL },
      top: { type: "string", default: "40" },
    },
  });
  const n = Number(values.streams);
  const protocol = values.protocol === "connect" ? "connect" : "grpc";
  const cleanups = new Cleanups();
  const signal = new AbortController().signal;
  try {
    const dir = await mkdtemp(join(os.tmpdir(), "tp-heap-"));
    cleanups.add("snapshots", () => rm(dir, { recursive: true, force: true }));
    const url = await createScratchDatabase(values.pg, "tp_heap", cleanups);
    const server = await startServer(url, dir, cleanups);
    const connections = new Connections(server.url, 8);
    await connections.open();
    cleanups.add("connections", async () => connections.close());
    const members: BenchMember[] = [];
    for (let t = 0; members.length < n + WARMUP_STREAMS; t++) {
      const team = await createBenchTeam(connections, "heap", `t${t}`, TEAM_SIZE, signal);
      await connections.client(t).send({ to: "*", message: text("hi") }, as(team.lead.token));
      members.push(...team.teammates);
    }
    // Streams spread over connections: one HTTP/2 connection takes 256 streams at most.
    const clients = Array.from({ length: Math.ceil((n + WARMUP_STREAMS) / 200) }, () =>
      createClient(
        TeamService,
        protocol === "grpc"
          ? createGrpcTransport({ baseUrl: server.url })
          : createConnectTransport({ baseUrl: server.url, httpVersion: "2" }),
      ),
    );
    let opened = 0;
    const open = async (some: BenchMember[]): Promise<OpenStream[]> => {
      const streams = some.map((m) =>
        openStream(clients[opened++ % clients.length] as TeamClient, m.token, () => {}, {
          afterSeq: 0n,
          signal,
        }),
      );
      await Promise.all(streams.map((s) => s.firstEnvelope));
      return streams;
    };
    // Streams opened and closed first: what the first streams warm (code, pools) is not theirs.
    const warm = await open(members.slice(n));
    for (const s of warm) s.close();
    await Promise.all(warm.map((s) => s.ended));
    await sleep(2_000);
    const before = await server.snapshot();
    const streams: OpenStream[] = [];
    for (let i = 0; i < n; i += 100) streams.push(...(await open(members.slice(i, i + 100))));
    await sleep(2_000);
    const after = await server.snapshot();
    report(before, after, n, Number(values.top), protocol);
    for (const s of streams) s.close();
  } finally {
    await cleanups.runAll((line) => console.error(line));
  }
}

/** The server, with a heap snapshot written into `dir` on SIGUSR1 (Node's --heapsnapshot-signal). */
async function startServer(databaseUrl: string, dir: string, cleanups: Cleanups) {
  // The server as `npm start` runs it (compiled), its snapshots written into `dir`.
  const { main } = await serverBuild();
  const child = spawn(process.execPath, ["--heapsnapshot-signal=SIGUSR1", main], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "info",
      SEND_RATE_PER_SEC: "0",
      CREATE_TEAM_RATE_PER_MIN: "0",
      MAX_TEAMS: "0",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanups.add("server", async () => {
    child.kill("SIGKILL");
  });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`server exited (${code}): ${output}`)));
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      output = (output + chunk).slice(-8_000);
      const start = /"event":"start".*?"url":"([^"]+)"/.exec(output);
      if (start?.[1]) resolve(start[1]);
    });
  });
  return {
    url,
    async snapshot(): Promise<Heap> {
      const known = new Set(await readdir(dir));
      child.kill("SIGUSR1");
      for (;;) {
        await sleep(500);
        const file = (await readdir(dir)).find((f) => !known.has(f) && f.endsWith(".heapsnapshot"));
        // Written in chunks, with pauses between them on a busy machine (a fixed wait and a
        // size that stopped growing both read half a file): read once it parses.
        if (file) {
          for (let tries = 0; ; tries++) {
            await sleep(3_000);
            try {
              return heapOf(await readFile(join(dir, file), "utf8"));
            } catch (err) {
              if (!(err instanceof SyntaxError) || tries === 100) throw err;
            }
          }
        }
      }
    },
  };
}

/** A .heapsnapshot summed by "type: name" (V8's node fields: type, name, self_size). */
function heapOf(text: string): Heap {
  const snapshot = JSON.parse(text) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[] } };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const meta = snapshot.snapshot.meta;
  const fields = meta.node_fields;
  const types = meta.node_types[0];
  const width = fields.length;
  const at = (field: string) => fields.indexOf(field);
  const [typeAt, nameAt, sizeAt, edgesAt] = ["type", "name", "self_size", "edge_count"].map(at);
  const { nodes, edges, strings } = snapshot;
  const edgeWidth = meta.edge_fields.length;
  const toAt = meta.edge_fields.indexOf("to_node");
  const typeOf = (i: number) => types[nodes[i + (typeAt as number)] as number] ?? "?";
  const nameOf = (i: number) => strings[nodes[i + (nameAt as number)] as number] ?? "";
  // A property dictionary (an object in dictionary mode) is named after the object that owns
  // it: that is the object to make fast.
  const owner = new Map<number, number>();
  for (let i = 0, e = 0; i < nodes.length; i += width) {
    const count = nodes[i + (edgesAt as number)] as number;
    for (let k = 0; k < count; k++, e += edgeWidth) {
      const to = edges[e + toAt] as number;
      if (typeOf(to) === "array" && nameOf(to) === "(object properties)") owner.set(to, i);
    }
  }
  const byKind = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < nodes.length; i += width) {
    const type = typeOf(i);
    let name = type.includes("string") || type === "code" ? "" : nameOf(i);
    const of = owner.get(i);
    if (name === "(object properties)" && of !== undefined) {
      name += ` of ${typeOf(of)} ${nameOf(of) || "(no constructor)"}`;
    }
    const key = `${type}: ${name.slice(0, 80)}`;
    const entry = byKind.get(key) ?? { bytes: 0, count: 0 };
    entry.bytes += nodes[i + (sizeAt as number)] as number;
    entry.count++;
    byKind.set(key, entry);
  }
  return { byKind };
}

function report(before: Heap, after: Heap, n: number, top: number, protocol: string): void {
  const rows = [...after.byKind].map(([kind, a]) => {
    const b = before.byKind.get(kind) ?? { bytes: 0, count: 0 };
    return { kind, bytes: (a.bytes - b.bytes) / n, count: (a.count - b.count) / n };
  });
  const total = rows.reduce((sum, r) => sum + r.bytes, 0);
  console.log(`${n} idle Subscribe streams over ${protocol}: ${Math.round(total)} B of heap each`);
  console.log("  bytes  objects  type: name (per stream)");
  for (const r of rows.sort((x, y) => y.bytes - x.bytes).slice(0, top)) {
    if (Math.abs(r.bytes) < 8) continue;
    console.log(
      `${Math.round(r.bytes).toString().padStart(7)}  ${r.count.toFixed(2).padStart(7)}  ${r.kind}`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
