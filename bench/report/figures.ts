import type { LatencySummary } from "../histogram.js";
import type { BaselineResult, BaselineStatement } from "../scenarios/baseline.js";
import type { LatencyRun } from "../scenarios/latency.js";
import { h2loadFigures, h2loadLatencyFigures } from "./h2load-figures.js";
import type { Figure, Limit, Scenarios } from "./types.js";

/** The issue's targets (2-core machine, real PostgreSQL, synchronous_commit on). */
export const TARGETS = {
  p99DeliverAt1000Ms: 10,
  sendsPerSecAt64: 10_000,
  fanoutLastMs: 100,
  kbPerIdleStream: 20,
  /** 2,000 stalled streams of one member (the per-member cap raised to let them in). */
  stalledRssGrowthMiB: 100,
} as const;

const ok = <T>(o: { status: string; result?: T }): T | undefined =>
  o.status === "ok" ? o.result : undefined;

const ratio = (value: number, limit: number) =>
  limit > 0 ? Math.round((value / limit) * 100) / 100 : Number.NaN;

const limit = (what: string, value: number, measured: number): Limit => ({
  what,
  value,
  ratio: ratio(measured, value),
});

function met(value: number | null, target: NonNullable<Figure["target"]>): boolean {
  if (value === null || Number.isNaN(value)) return false;
  return target.op === "<=" ? value <= target.value : value >= target.value;
}

/** Every figure of the run, with its target (if any) and its ratio to the baseline. */
export function buildFigures(s: Scenarios): Figure[] {
  const base = ok(s.baseline);
  return [
    ...baselineFigures(base),
    ...latencyFigures(s, base),
    ...throughputFigures(s, base),
    ...fanoutFigures(s, base),
    ...protocolFigures(s, base),
    ...memoryFigures(s),
    ...stalledFigures(s),
    ...h2loadFigures(s, base),
    ...h2loadLatencyFigures(s, base),
  ];
}

function baselineRun(base: BaselineResult | undefined, statement: BaselineStatement, c: number) {
  return base?.runs.find((r) => r.statement === statement && r.concurrency === c);
}

function baselineFigures(base: BaselineResult | undefined): Figure[] {
  if (!base) return [];
  const figures: Figure[] = base.runs.map((r) => ({
    scenario: "baseline",
    figure: `${r.statement === "insert" ? "INSERT" : "INSERT+NOTIFY"} x${r.concurrency}`,
    value: r.commitsPerSec,
    unit: "commits/s",
    note: `one row per commit; p50 ${r.latency.p50Ms} ms, p99 ${r.latency.p99Ms} ms`,
  }));
  figures.push({
    scenario: "baseline",
    figure: `${base.batch.rows}-row INSERT, one commit`,
    value: base.batch.medianMs,
    unit: "ms",
    note: `median of ${base.batch.samplesMs.length}`,
  });
  return figures;
}

const PERCENTILES = [
  ["p50", "p50Ms"],
  ["p99", "p99Ms"],
  ["p99.9", "p999Ms"],
] as const satisfies readonly (readonly [string, keyof LatencySummary])[];

function latencyFigures(s: Scenarios, base: BaselineResult | undefined): Figure[] {
  const result = ok(s.latency);
  if (!result) return [];
  const commit = baselineRun(base, "insert", 1)?.latency;
  return result.runs.flatMap((run) =>
    PERCENTILES.map(([label, key]): Figure => {
      const value = run.deliver.count > 0 ? run.deliver[key] : null;
      const target =
        run.ratePerSec === 1_000 && label === "p99"
          ? ({ op: "<=", value: TARGETS.p99DeliverAt1000Ms } as const)
          : undefined;
      // Saturated or lossy runs never meet a target: their percentiles leave messages out.
      const healthy = !run.saturated && run.undelivered === 0 && run.sendErrors === 0;
      const problems = [
        run.saturated ? "SATURATED: stopped early" : "",
        run.undelivered ? `${run.undelivered} undelivered` : "",
        run.sendErrors ? `${run.sendErrors} send errors (${run.firstError})` : "",
        run.saturated || run.undelivered ? `server answered ${run.answeredPerSec} sends/s` : "",
      ].filter(Boolean);
      return {
        scenario: "latency",
        figure: `${label} send->deliver @${run.ratePerSec.toLocaleString("en-US")}/s`,
        value,
        unit: "ms",
        ...(target ? { target, met: healthy && met(value, target) } : {}),
        ...(commit && value !== null
          ? { limits: [limit(`one-row commit ${label}`, commit[key], value)] }
          : {}),
        ...(label === "p50"
          ? { note: [`${run.delivered} msgs`, ...problems].join("; ") }
          : label === "p99"
            ? { note: [...problems, loopDelayNote(run)].filter(Boolean).join("; ") }
            : problems.length
              ? { note: problems.join("; ") }
              : {}),
      };
    }),
  );
}

/** Where sends waited: each process's event-loop delay over the measured window. */
function loopDelayNote(run: LatencyRun): string {
  const d = run.loopDelay;
  if (!d || (!d.server && !d.loadGenerator)) return "";
  const of = (x: { p99Ms: number; maxMs: number } | null) =>
    x ? `p99 ${x.p99Ms} ms, max ${x.maxMs} ms` : "n/a";
  return `event-loop delay: server ${of(d.server)}; load generator ${of(d.loadGenerator)}`;
}

function throughputFigures(s: Scenarios, base: BaselineResult | undefined): Figure[] {
  const result = ok(s.throughput);
  if (!result) return [];
  const floorOf = (concurrency: number) =>
    result.runs.find((r) => r.pattern === "rpc-floor" && r.concurrency === concurrency);
  return result.runs.map((run): Figure => {
    if (run.pattern === "rpc-floor") {
      return {
        scenario: "throughput",
        figure: `RPC floor x${run.concurrency} (Send refused before the database)`,
        value: run.sendsPerSec,
        unit: "calls/s",
        limits: [],
        note:
          `call p50 ${run.latency.p50Ms} ms` +
          (run.cpu.serverUsPerSend !== null
            ? `; server CPU ${run.cpu.serverUsPerSend} µs/call, load generator ${run.cpu.benchUsPerSend} µs/call`
            : "") +
          (run.errors ? `; ${run.errors} errors (${run.firstError})` : ""),
      };
    }
    const floor = floorOf(run.concurrency);
    const insert = baselineRun(base, "insert", run.concurrency);
    const notify = baselineRun(base, "insert+notify", run.concurrency);
    const target =
      run.concurrency === 64 ? ({ op: ">=", value: TARGETS.sendsPerSecAt64 } as const) : undefined;
    const limits = [
      ...(insert
        ? [limit(`INSERT x${run.concurrency}`, insert.commitsPerSec, run.sendsPerSec)]
        : []),
      ...(notify
        ? [limit(`+NOTIFY x${run.concurrency}`, notify.commitsPerSec, run.sendsPerSec)]
        : []),
      ...(floor
        ? [limit(`RPC floor x${run.concurrency}`, floor.sendsPerSec, run.sendsPerSec)]
        : []),
    ];
    return {
      scenario: "throughput",
      figure: `${run.pattern === "spread" ? `spread over ${result.inboxes} inboxes` : "one inbox"} x${run.concurrency}`,
      value: run.sendsPerSec,
      unit: "sends/s",
      ...(target ? { target, met: run.errors === 0 && met(run.sendsPerSec, target) } : {}),
      limits,
      note:
        `send p50 ${run.latency.p50Ms} ms, p99 ${run.latency.p99Ms} ms` +
        (run.cpu.serverUsPerSend !== null
          ? `; server CPU ${run.cpu.serverUsPerSend} µs/send (${run.cpu.serverCoreShare} core), load generator ${run.cpu.benchUsPerSend} µs/send`
          : "") +
        (run.errors ? `; ${run.errors} errors (${run.firstError})` : ""),
    };
  });
}

function fanoutFigures(s: Scenarios, base: BaselineResult | undefined): Figure[] {
  const result = ok(s.fanout);
  if (!result) return [];
  const missed = result.rounds.reduce((n, r) => n + r.missed, 0);
  const batch = base?.batch;
  const target = { op: "<=", value: TARGETS.fanoutLastMs } as const;
  const n = result.subscribers.toLocaleString("en-US");
  const batchLimit = (v: number) =>
    batch ? { limits: [limit(`${batch.rows}-row commit`, batch.medianMs, v)] } : {};
  return [
    {
      scenario: "fanout",
      figure: `last of ${n} subscribers (median)`,
      value: result.lastMedianMs,
      unit: "ms",
      target,
      met: missed === 0 && met(result.lastMedianMs, target),
      ...batchLimit(result.lastMedianMs),
      note: `${result.rounds.length} rounds${missed ? `; ${missed} deliveries missed` : ""}`,
    },
    {
      scenario: "fanout",
      figure: `last of ${n} subscribers (worst)`,
      value: result.lastMaxMs,
      unit: "ms",
      ...batchLimit(result.lastMaxMs),
    },
    {
      scenario: "fanout",
      figure: `broadcast Send returned (median)`,
      value: result.sendAckMedianMs,
      unit: "ms",
      ...batchLimit(result.sendAckMedianMs),
    },
  ];
}

function protocolFigures(s: Scenarios, base: BaselineResult | undefined): Figure[] {
  const result = ok(s.protocol);
  if (!result) return [];
  const commit = baselineRun(base, "insert", 1)?.latency;
  // Two durable sends in sequence (request, approval): two commits is the floor.
  return (["p50", "p99"] as const).map((label): Figure => {
    const key = label === "p50" ? "p50Ms" : "p99Ms";
    const value = result.completed > 0 ? result.roundTrip[key] : null;
    return {
      scenario: "protocol",
      figure: `${label} shutdown request->approval held by lead`,
      value,
      unit: "ms",
      ...(commit && value !== null
        ? { limits: [limit(`2 x one-row commit ${label}`, round3(2 * commit[key]), value)] }
        : {}),
      note:
        label === "p50"
          ? `${result.completed}/${result.rounds} rounds; request leg p50 ${result.requestLeg.p50Ms} ms, ` +
            `response leg p50 ${result.responseLeg.p50Ms} ms`
          : `request leg p99 ${result.requestLeg.p99Ms} ms, response leg p99 ${result.responseLeg.p99Ms} ms`,
    };
  });
}

function memoryFigures(s: Scenarios): Figure[] {
  const result = ok(s.memory);
  if (!result) return [];
  const target = { op: "<=", value: TARGETS.kbPerIdleStream } as const;
  return result.levels.map((level, i): Figure => {
    const kb = Math.round(level.bytesPerStream / 100) / 10;
    // From the level before: the cost of one more stream, without the fixed costs (heap
    // capacity V8 adds in steps) that the first level carries.
    const previous = result.levels[i - 1];
    const marginal = previous
      ? `; ${((level.rssAfterGcBytes - previous.rssAfterGcBytes) / (level.streams - previous.streams) / 1000).toFixed(1)} KB per stream from ${previous.streams.toLocaleString("en-US")} streams`
      : "";
    return {
      scenario: "memory",
      figure: `per idle stream @${level.streams.toLocaleString("en-US")} streams`,
      value: kb,
      unit: "KB/stream",
      target,
      met: met(kb, target),
      note:
        `RSS after GC; without forcing GC ${(level.bytesPerStreamNoGc / 1000).toFixed(1)} KB, ` +
        `V8 heap ${(level.heapBytesPerStream / 1000).toFixed(1)} KB; server RSS ` +
        `${(level.rssAfterGcBytes / 2 ** 20).toFixed(0)} MiB; ${result.connections} connections` +
        marginal,
    };
  });
}

function stalledFigures(s: Scenarios): Figure[] {
  const result = ok(s.stalled);
  if (!result) return [];
  const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  return result.runs.flatMap((run): Figure[] => {
    const what = `${run.streams.toLocaleString("en-US")} stalled streams, one token (${run.label})`;
    const caps = Object.entries(run.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(", ");
    const raised = Object.keys(run.env).length > 0;
    const target = { op: "<=", value: TARGETS.stalledRssGrowthMiB } as const;
    const growth = mib(run.rssGrowthBytes);
    return [
      {
        scenario: "stalled",
        figure: `${what}: RSS growth`,
        value: growth,
        unit: "MiB",
        ...(raised ? { target, met: met(growth, target) } : {}),
        note:
          `${run.held} held, ${run.refusedByMemberCap} refused by the member cap` +
          (caps ? ` (${caps})` : "") +
          `; after GC +${mib(run.rssAfterGcGrowthBytes)} MiB; backlog ` +
          `${(run.backlogBytes / 1e6).toFixed(1)} MB over ${run.connections} connections; ` +
          `${run.pagesRead} pages read, ${run.pageBytesHeld} page bytes held; ` +
          `another member's ListMembers ${run.otherMemberCallMs} ms`,
      },
      {
        scenario: "stalled",
        figure: `${what}: refused by the per-member cap`,
        value: run.refusedByMemberCap,
        unit: "streams",
        note: `${run.endedOtherwise} ended otherwise (reset or refused by HTTP/2)`,
      },
    ];
  });
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;
