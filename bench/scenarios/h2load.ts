import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { SendRequestSchema } from "../../gen/team/v1/team_service_pb.js";
import { postgresCpu, postgresCpuBetween } from "../child-process.js";
import { Connections } from "../connections.js";
import { FLOORS, type FloorName, startFloor } from "../floor-process.js";
import { writeGrpcBody } from "../h2load/grpc-body.js";
import { type H2loadSummary, h2loadVersion, runH2load } from "../h2load/run.js";
import { sampleValue, scrapeMetrics } from "../server-metrics.js";
import { createBenchTeam, LEAD_NAME, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

/** h2load's shape: connections (its clients) and concurrent streams on each. */
export interface H2loadShape {
  connections: number;
  streams: number;
}

/**
 * What answers: a floor server (bench/floors/), or our server's Send refused by the rules
 * before any database work (no message; the token is cached), or our durable Send, each
 * connection a distinct sender writing to a distinct inbox (spread) or all to the lead's.
 */
export type H2loadTarget = FloorName | "send-refused" | "send-spread" | "send-one-inbox";

export interface H2loadThroughputRun {
  target: H2loadTarget;
  shape: H2loadShape;
  /** h2load processes run side by side (one per sender and body, summed). */
  processes: number;
  /** Distinct inboxes written to (durable sends only). */
  inboxes: number | null;
  /** Calls answered per second of the measured window, summed over the processes. */
  callsPerSec: number;
  /** Calls h2load saw answered with HTTP 200 in the measured window. */
  calls: number;
  /** Streams h2load saw fail, error or time out. */
  failed: number;
  /**
   * Our server only: the calls it counted (team_rpc_calls_total) while h2load ran, by
   * outcome. h2load sees HTTP 200 whatever the grpc-status: this says the durable sends
   * were stored (ok) and the refused ones refused (invalid_argument), and nothing else.
   */
  serverCounted: { ok: number; invalidArgument: number; other: number } | null;
  /** Calls that ended otherwise than intended (wrong code), by the server's count. */
  wrongOutcome: number;
  meanCallMs: number | null;
  cpu: {
    serverUsPerCall: number | null;
    serverCoreShare: number | null;
    /** h2load's own CPU, all its processes: small next to the server's, so not the bound. */
    loadGeneratorUsPerCall: number | null;
    loadGeneratorCoreShare: number | null;
    /**
     * Every PostgreSQL process's CPU over the window (any database's: the machine's other
     * work shows here too), per call: with the server's and h2load's, what one call costs
     * the whole machine, and so how many calls a second its cores could carry.
     */
    postgresUsPerCall: number | null;
    postgresCoreShare: number | null;
  };
}

export interface H2loadResult {
  h2loadVersion: string;
  shapes: H2loadShape[];
  runs: H2loadThroughputRun[];
}

const SEND_PATH = "/team.v1.TeamService/Send";
const TARGET_ORDER: H2loadTarget[] = [...FLOORS, "send-refused", "send-spread", "send-one-inbox"];
const GRPC_HEADERS = { "content-type": "application/grpc", te: "trailers" };
const bearer = (token: string) => ({ ...GRPC_HEADERS, authorization: `Bearer ${token}` });

/** One h2load process of a run: its body and headers. */
interface Load {
  bodyFile: string;
  headers: Record<string, string>;
}

/** Where a run's calls go and what is known of its server. */
interface Endpoint {
  url: string;
  cpuMs(): Promise<number | undefined>;
  /** Our server: its call counts, to tell stored, refused and failed calls apart. */
  counts?: () => Promise<{ ok: number; invalidArgument: number; all: number }>;
}

/**
 * The gRPC unary call driven by h2load (a C load generator) at each shape, against the
 * same-run floors (each its own child process) and our server: the Send refused early and
 * the durable Send, spread and into one inbox.
 */
export async function runH2loadThroughput(ctx: ScenarioContext): Promise<H2loadResult> {
  const p = ctx.profile.h2load;
  const { signal } = ctx;
  const dir = await mkdtemp(join(os.tmpdir(), "tp-h2load-"));
  const connections = new Connections(ctx.url, 2);
  try {
    const version = await h2loadVersion(signal);
    const most = Math.max(...p.shapes.map((s) => s.connections));
    await connections.open();
    const team = await createBenchTeam(connections, ctx.runId, "h2load", most + 1, signal);
    const mates = team.teammates;
    const message = text("h2load");
    const body = (name: string, to: string, withMessage = true) =>
      writeGrpcBody(dir, name, SendRequestSchema, withMessage ? { to, message } : { to });
    // A floor decodes the same request our server does (raw node:http2 ignores it).
    const floorLoad: Load = {
      bodyFile: await body("floor", mates[1]?.name ?? ""),
      headers: GRPC_HEADERS,
    };
    const refused: Load = {
      bodyFile: await body("refused", LEAD_NAME, false),
      headers: bearer(mates[0]?.token ?? ""),
    };
    // Connection i is sender i; spread: to sender i+1's inbox, so each inbox has one writer.
    const spread: Load[] = [];
    const oneInbox: Load[] = [];
    for (let i = 0; i < most; i++) {
      const sender = mates[i];
      const next = mates[i + 1];
      if (!sender || !next) throw new Error("the team is smaller than the most connections");
      spread.push({
        bodyFile: await body(`spread-${i}`, next.name),
        headers: bearer(sender.token),
      });
      oneInbox.push({
        bodyFile: await body(`lead-${i}`, LEAD_NAME),
        headers: bearer(sender.token),
      });
    }

    const runs: H2loadThroughputRun[] = [];
    const record = (run: H2loadThroughputRun) => {
      runs.push(run);
      ctx.log(
        `  h2load ${run.target} ${run.shape.connections}x${run.shape.streams}: ` +
          `${run.callsPerSec} calls/s, server ${run.cpu.serverUsPerCall} µs/call ` +
          `(${run.cpu.serverCoreShare} core), h2load ${run.cpu.loadGeneratorUsPerCall} µs/call, ` +
          `PostgreSQL ${run.cpu.postgresUsPerCall} µs/call` +
          (run.failed || run.wrongOutcome
            ? `, ${run.failed} failed, ${run.wrongOutcome} wrong outcome`
            : ""),
      );
    };
    const ours: Endpoint = {
      url: ctx.url,
      cpuMs: ctx.serverCpuMs,
      counts: async () => sendCounts(await scrapeMetrics(ctx.url, signal)),
    };
    // Every floor is up for the whole scenario (an idle one costs nothing) and the targets
    // take turns at each shape, so the figures a ratio compares are minutes apart at most
    // on a machine whose load drifts.
    const floors = await Promise.all(FLOORS.map((name) => startFloor(name)));
    try {
      for (const shape of p.shapes) {
        for (const floor of floors)
          record(await measure(floor.name, shape, [floorLoad], floor, ctx));
        record(await measure("send-refused", shape, [refused], ours, ctx));
        // One process per connection: h2load sends one body with one set of headers.
        const n = shape.connections;
        record(await measure("send-spread", shape, spread.slice(0, n), ours, ctx));
        record(await measure("send-one-inbox", shape, oneInbox.slice(0, n), ours, ctx));
      }
    } finally {
      await Promise.all(floors.map((f) => f.stop()));
    }
    const order = (r: H2loadThroughputRun) => TARGET_ORDER.indexOf(r.target);
    runs.sort((a, b) => order(a) - order(b)); // reported by target, each at every shape
    return { h2loadVersion: version, shapes: p.shapes, runs };
  } finally {
    connections.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * One run: a warm-up (not measured), then the measured window. With one load, one h2load
 * process takes the whole shape; with several, each takes one connection of it.
 */
async function measure(
  target: H2loadTarget,
  shape: H2loadShape,
  loads: Load[],
  endpoint: Endpoint,
  ctx: ScenarioContext,
): Promise<H2loadThroughputRun> {
  const p = ctx.profile.h2load;
  const perProcess: H2loadShape =
    loads.length === 1 ? shape : { connections: 1, streams: shape.streams };
  const runAll = (durationMs: number) =>
    Promise.all(
      loads.map((load) =>
        runH2load({
          url: endpoint.url,
          path: SEND_PATH,
          ...load,
          ...perProcess,
          durationMs,
          signal: ctx.signal,
        }),
      ),
    );
  if (p.warmupSec > 0) await runAll(p.warmupSec * 1000);
  const countsBefore = await endpoint.counts?.();
  const cpuBefore = await endpoint.cpuMs();
  const pgBefore = await postgresCpu();
  const summaries = await runAll(p.measureSec * 1000);
  const pgAfter = await postgresCpu();
  const cpuAfter = await endpoint.cpuMs();
  const countsAfter = await endpoint.counts?.();
  return summarize(target, shape, loads.length, summaries, {
    serverMs: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : null,
    postgresMs: postgresCpuBetween(pgBefore, pgAfter),
    counts:
      countsBefore && countsAfter
        ? {
            ok: countsAfter.ok - countsBefore.ok,
            invalidArgument: countsAfter.invalidArgument - countsBefore.invalidArgument,
            other:
              countsAfter.all -
              countsBefore.all -
              (countsAfter.ok - countsBefore.ok) -
              (countsAfter.invalidArgument - countsBefore.invalidArgument),
          }
        : null,
  });
}

function summarize(
  target: H2loadTarget,
  shape: H2loadShape,
  processes: number,
  summaries: H2loadSummary[],
  server: {
    serverMs: number | null;
    postgresMs: number | null;
    counts: H2loadThroughputRun["serverCounted"];
  },
): H2loadThroughputRun {
  const sum = (f: (s: H2loadSummary) => number) => summaries.reduce((n, s) => n + f(s), 0);
  const calls = sum((s) => s.succeeded);
  const seconds = Math.max(...summaries.map((s) => s.elapsedMs)) / 1000;
  const loadMs = summaries.every((s) => s.cpuMs !== null) ? sum((s) => s.cpuMs ?? 0) : null;
  const perCall = (ms: number | null) =>
    ms === null || calls === 0 ? null : Math.round((ms * 1000) / calls);
  const share = (ms: number | null) =>
    ms === null ? null : Math.round((ms / 1000 / seconds) * 100) / 100;
  const c = server.counts;
  // What the server should have counted: every durable send stored, every refused one refused.
  const intended = target === "send-refused" ? "invalidArgument" : "ok";
  const wrongOutcome = c ? c.other + (intended === "ok" ? c.invalidArgument : c.ok) : 0;
  const weighted = sum((s) => (s.meanRequestMs ?? 0) * s.succeeded);
  return {
    target,
    shape,
    processes,
    inboxes: target === "send-spread" ? shape.connections : target === "send-one-inbox" ? 1 : null,
    callsPerSec: sum((s) => s.requestsPerSec),
    calls,
    failed: sum((s) => s.failed + s.errored + s.timeout),
    serverCounted: c,
    wrongOutcome,
    meanCallMs: calls > 0 ? Math.round((weighted / calls) * 1000) / 1000 : null,
    cpu: {
      serverUsPerCall: perCall(server.serverMs),
      serverCoreShare: share(server.serverMs),
      loadGeneratorUsPerCall: perCall(loadMs),
      loadGeneratorCoreShare: share(loadMs),
      postgresUsPerCall: perCall(server.postgresMs),
      postgresCoreShare: share(server.postgresMs),
    },
  };
}

/** Send calls our server counted so far: stored, refused as invalid, and all of them. */
function sendCounts(metrics: string): { ok: number; invalidArgument: number; all: number } {
  const sendLines = metrics
    .split("\n")
    // A call the load generator left in flight when its run ended is counted canceled by the
    // server (the client went away): not an outcome of the call, so not a wrong one.
    .filter(
      (l) => l.startsWith('team_rpc_calls_total{method="Send"') && !l.includes('code="canceled"'),
    );
  const all = sendLines.reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  return {
    ok: sampleValue(metrics, 'team_rpc_calls_total{method="Send",code="ok"}'),
    invalidArgument: sampleValue(
      metrics,
      'team_rpc_calls_total{method="Send",code="invalid_argument"}',
    ),
    all,
  };
}
