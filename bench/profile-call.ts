/**
 * Where one kind of gRPC call spends the server's CPU: the real server under V8's sampling
 * profiler, driven by h2load (a C load generator) with one call kind at one shape, then the
 * profile summed by self time per function and per package. What to optimise next is read
 * off this, not guessed (issue #12).
 *
 *   npm run bench:profile -- --call refused            # Send refused by the rules, 64 x 1
 *   npm run bench:profile -- --call spread --shape 4x32 --seconds 10
 *
 * Needs PostgreSQL (a scratch database, dropped at the end; --pg <admin url> to choose) and
 * h2load (Debian's nghttp2-client). Writes the whole profile next to the summary
 * (bench/results/<call>.server.cpuprofile.json) for DevTools or speedscope.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { SendRequestSchema } from "../gen/team/v1/team_service_pb.js";
import { Cleanups } from "./cleanup.js";
import { Connections } from "./connections.js";
import { createScratchDatabase, DEFAULT_PG_ADMIN_URL } from "./database-target.js";
import { writeGrpcBody } from "./h2load/grpc-body.js";
import { runH2load } from "./h2load/run.js";
import { startBenchServer } from "./server-process.js";
import { createBenchTeam, LEAD_NAME, text } from "./teams.js";

const CALLS = ["refused", "spread", "one-inbox"] as const;
type CallKind = (typeof CALLS)[number];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      call: { type: "string", default: "refused" },
      shape: { type: "string", default: "64x1" },
      seconds: { type: "string", default: "10" },
      pg: { type: "string", default: DEFAULT_PG_ADMIN_URL },
      top: { type: "string", default: "40" },
      env: { type: "string", multiple: true, default: [] },
    },
  });
  const call = values.call as CallKind;
  if (!CALLS.includes(call)) throw new Error(`--call is one of ${CALLS.join(", ")}`);
  const [connections, streams] = (values.shape ?? "").split("x").map(Number);
  if (!connections || !streams) throw new Error("--shape is <connections>x<streams>, e.g. 64x1");
  const seconds = Number(values.seconds);
  const env = Object.fromEntries(values.env.map((kv) => kv.split("=", 2) as [string, string]));

  const cleanups = new Cleanups();
  const work = await mkdtemp(join(os.tmpdir(), "tp-profile-"));
  cleanups.add("work dir", () => rm(work, { recursive: true, force: true }));
  const abort = new AbortController();
  try {
    const url = await createScratchDatabase(values.pg, "tp_profile", cleanups);
    const profileDir = join(work, "cpu");
    const server = await startBenchServer(
      { DATABASE_URL: url, ...env },
      { cpuProfileDir: profileDir },
    );
    cleanups.add("server", () => server.stop());
    const clients = new Connections(server.url, 2);
    await clients.open();
    const team = await createBenchTeam(clients, "profile", call, connections + 1, abort.signal);
    clients.close();
    const headers = (token: string) => ({
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    const loads: { bodyFile: string; headers: Record<string, string> }[] = [];
    if (call === "refused") {
      loads.push({
        bodyFile: await writeGrpcBody(work, "refused", SendRequestSchema, { to: LEAD_NAME }),
        headers: headers(team.teammates[0]?.token ?? ""),
      });
    } else {
      for (let i = 0; i < connections; i++) {
        const sender = team.teammates[i];
        const to = call === "spread" ? team.teammates[i + 1]?.name : LEAD_NAME;
        if (!sender || !to) throw new Error("team too small");
        loads.push({
          bodyFile: await writeGrpcBody(work, `send-${i}`, SendRequestSchema, {
            to,
            message: text("profile"),
          }),
          headers: headers(sender.token),
        });
      }
    }
    const shapeOf = loads.length === 1 ? { connections, streams } : { connections: 1, streams };
    const runAll = (durationMs: number) =>
      Promise.all(
        loads.map((load) =>
          runH2load({
            url: server.url,
            path: "/team.v1.TeamService/Send",
            ...load,
            ...shapeOf,
            durationMs,
            signal: abort.signal,
          }),
        ),
      );
    await runAll(2_000);
    const cpuBefore = await server.cpuMs();
    const summaries = await runAll(seconds * 1000);
    const cpuAfter = await server.cpuMs();
    const calls = summaries.reduce((n, s) => n + s.succeeded, 0);
    const perSec = summaries.reduce((n, s) => n + s.requestsPerSec, 0);
    await server.stop();

    const files = (await readdir(profileDir)).filter((f) => f.endsWith(".cpuprofile"));
    // The main thread's profile is the biggest (tsx has a loader thread with a small one).
    let biggest = { file: "", size: 0, text: "" };
    for (const f of files) {
      const text = await readFile(join(profileDir, f), "utf8");
      if (text.length > biggest.size) biggest = { file: f, size: text.length, text };
    }
    const out = fileURLToPath(new URL(`results/${call}.server.cpuprofile.json`, import.meta.url));
    await writeFile(out, biggest.text);
    const profile = JSON.parse(biggest.text) as CpuProfile;
    const usPerCall =
      cpuBefore !== undefined && cpuAfter !== undefined && calls > 0
        ? Math.round(((cpuAfter - cpuBefore) * 1000) / calls)
        : null;
    console.log(
      `${call} at ${connections}x${streams}: ${Math.round(perSec)} calls/s, server ${usPerCall} µs/call`,
    );
    summarize(profile, Number(values.top));
    console.log(`profile: ${out}`);
  } finally {
    abort.abort();
    await cleanups.runAll((line) => console.error(line));
  }
}

/** Self time by function and by package (or project folder), as shares of the samples. */
function summarize(profile: CpuProfile, top: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  let total = 0;
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    total += us;
    const place = placeOf(frame.url, frame.functionName);
    const name = `${frame.functionName || "(anonymous)"} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byPlace.set(place, (byPlace.get(place) ?? 0) + us);
  }
  const idle = [...byFunction]
    .filter(([n]) => n.startsWith("(idle)"))
    .reduce((s, [, v]) => s + v, 0);
  const busy = total - idle;
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
  console.log(`busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s sampled`);
  console.log("\nby package or folder (self time, share of busy):");
  for (const [place, us] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    if (place === "(idle)") continue;
    console.log(`  ${pct(us)}  ${place}`);
  }
  console.log("\nby function:");
  for (const [name, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    if (name.startsWith("(idle)")) continue;
    console.log(`  ${pct(us)}  ${name}`);
  }
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) return url.slice(nm + "node_modules/".length);
  const repo = url.indexOf("/main/");
  return repo >= 0 ? url.slice(repo + "/main/".length) : url;
}

function placeOf(url: string, fn: string): string {
  if (!url) return fn.startsWith("(") ? fn : "(native)";
  if (url.startsWith("node:")) return url.split("/").slice(0, 2).join("/");
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const s = shortUrl(url);
  return s.split("/").slice(0, 2).join("/");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
