import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Cleanups } from "./bench/cleanup.js";
import { as, Connections } from "./bench/connections.js";
import { createScratchDatabase, DEFAULT_PG_ADMIN_URL } from "./bench/database-target.js";
import { type OpenStream, openStream } from "./bench/subscriber.js";
import { createBenchTeam, text } from "./bench/teams.js";

const N = Number(process.argv[2] ?? 1000);
const dir = "/tmp/heap/snaps";
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const cleanups = new Cleanups();
const signal = new AbortController().signal;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const url = await createScratchDatabase(DEFAULT_PG_ADMIN_URL, "tp_heap", cleanups);
const child = spawn(
  process.execPath,
  ["--import", join(process.cwd(), "node_modules/tsx/dist/loader.mjs"), "--heapsnapshot-signal=SIGUSR1", join(process.cwd(), "server/main.ts")],
  {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: url, PORT: "0", HOST: "127.0.0.1", SEND_RATE_PER_SEC: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  },
);
let out = "";
const serverUrl = await new Promise<string>((resolve) => {
  child.stdout!.setEncoding("utf8").on("data", (c: string) => {
    out += c;
    const m = /"event":"start".*?"url":"([^"]+)"/.exec(out);
    if (m?.[1]) resolve(m[1]);
  });
});
const snapshot = async (label: string) => {
  const before = new Set(readdirSync(dir));
  child.kill("SIGUSR1");
  for (;;) {
    await sleep(500);
    const f = readdirSync(dir).find((x) => !before.has(x) && x.endsWith(".heapsnapshot"));
    if (f) {
      await sleep(3000);
      return summarize(join(dir, f), label);
    }
  }
};
function summarize(file: string, label: string) {
  const snap = JSON.parse(readFileSync(file, "utf8"));
  const f = snap.snapshot.meta.node_fields as string[];
  const types = snap.snapshot.meta.node_types[0] as string[];
  const nodes = snap.nodes as number[];
  const strings = snap.strings as string[];
  const w = f.length;
  const ti = f.indexOf("type"), ni = f.indexOf("name"), si = f.indexOf("self_size");
  const agg = new Map<string, { size: number; count: number }>();
  for (let i = 0; i < nodes.length; i += w) {
    const type = types[nodes[i + ti]!]!;
    let name = strings[nodes[i + ni]!]!;
    if (type === "string" || type === "concatenated string" || type === "sliced string") name = "(string)";
    if (type === "code") name = "(code)";
    if (type === "array") name = `(array) ${name}`.slice(0, 60);
    const key = `${type}: ${name.slice(0, 80)}`;
    const a = agg.get(key) ?? { size: 0, count: 0 };
    a.size += nodes[i + si]!;
    a.count++;
    agg.set(key, a);
  }
  console.error(`snapshot ${label}: ${file}`);
  return agg;
}
try {
  const connections = new Connections(serverUrl, 8);
  await connections.open();
  const members = [];
  for (let t = 0; members.length < N + 50; t++) {
    const team = await createBenchTeam(connections, "heap", `t${t}`, 500, signal);
    await connections.client(t).send({ to: "*", message: text("hi") }, as(team.lead.token));
    members.push(...team.teammates);
  }
  const open = async (ms: typeof members) => {
    const s = ms.map((m, i) => openStream(connections.client(i), m.token, () => {}, { afterSeq: 0n, signal }));
    await Promise.all(s.map((x) => x.firstEnvelope));
    return s;
  };
  // warm-up
  const warm = await open(members.slice(N, N + 50));
  for (const s of warm) s.close();
  await Promise.all(warm.map((s) => s.ended));
  await sleep(2000);
  const a = await snapshot("0");
  const streams: OpenStream[] = [];
  for (let i = 0; i < N; i += 100) streams.push(...(await open(members.slice(i, i + 100))));
  await sleep(2000);
  const b = await snapshot(String(N));
  const rows = [...b].map(([k, v]) => {
    const o = a.get(k) ?? { size: 0, count: 0 };
    return { k, dsize: (v.size - o.size) / N, dcount: (v.count - o.count) / N };
  }).filter((r) => Math.abs(r.dsize) > 8).sort((x, y) => y.dsize - x.dsize);
  let total = 0;
  for (const r of rows) total += r.dsize;
  console.log(`total heap per stream: ${total.toFixed(0)} B`);
  for (const r of rows.slice(0, 60)) console.log(`${r.dsize.toFixed(0).padStart(6)} B  ${r.dcount.toFixed(2).padStart(5)}/stream  ${r.k}`);
  for (const s of streams) s.close();
  connections.close();
} finally {
  child.kill("SIGKILL");
  await cleanups.runAll(console.error);
}
