import os from "node:os";
import type { BaselineResult } from "../scenarios/baseline.js";
import type { H2loadShape, H2loadTarget, H2loadThroughputRun } from "../scenarios/h2load.js";
import type { Figure, Limit, Scenarios } from "./types.js";

/** Issue #12's targets for the h2load runs. */
export const H2LOAD_TARGETS = {
  /** Durable sends per second at 64 concurrent (64 connections x 1 stream). */
  sendsPerSecAt64: 10_000,
  /** The Send refused early, as a share of raw node:http2 at the same shape. */
  refusedShareOfRaw: 0.5,
  p99DeliverAt1000Ms: 10,
} as const;

const LABELS: Record<H2loadTarget, string> = {
  "raw-http2": "raw node:http2, fixed response",
  "grpc-js": "bare @grpc/grpc-js",
  "connect-node": "bare connect-node",
  "send-refused": "Send refused early",
  "send-spread": "durable Send",
  "send-one-inbox": "durable Send, one inbox",
};

const shapeLabel = (s: H2loadShape) =>
  s.streams === 1 && s.connections === 1
    ? "1 connection"
    : s.streams === 1
      ? `${s.connections} conn x 1`
      : `${s.connections} conn x ${s.streams}`;

const ratio = (value: number, of: number) =>
  of > 0 ? Math.round((value / of) * 100) / 100 : Number.NaN;

const sameShape = (a: H2loadShape, b: H2loadShape) =>
  a.connections === b.connections && a.streams === b.streams;

function runLabel(run: H2loadThroughputRun): string {
  const spread =
    run.target === "send-spread"
      ? `, spread over ${run.inboxes} inbox${run.inboxes === 1 ? "" : "es"}`
      : "";
  return `${LABELS[run.target]}${spread}, ${shapeLabel(run.shape)}`;
}

/** The h2load runs: each with its ratio to the floors of the same shape, the targets on ours. */
export function h2loadFigures(s: Scenarios, base: BaselineResult | undefined): Figure[] {
  if (s.h2load.status !== "ok") return [];
  const { runs } = s.h2load.result;
  const of = (target: H2loadTarget, shape: H2loadShape) =>
    runs.find((r) => r.target === target && sameShape(r.shape, shape));
  return runs.map((run): Figure => {
    const floors: H2loadTarget[] =
      run.target === "raw-http2"
        ? []
        : run.target === "grpc-js" || run.target === "connect-node"
          ? ["raw-http2"]
          : run.target === "send-refused"
            ? ["raw-http2", "grpc-js", "connect-node"]
            : ["send-refused", "raw-http2", "connect-node"];
    const limits: Limit[] = floors.flatMap((f) => {
      const floor = of(f, run.shape);
      return floor
        ? [
            {
              what: LABELS[f],
              value: floor.callsPerSec,
              ratio: ratio(run.callsPerSec, floor.callsPerSec),
            },
          ]
        : [];
    });
    const concurrency = run.shape.connections * run.shape.streams;
    const notify = base?.runs.find(
      (r) => r.statement === "insert+notify" && r.concurrency === concurrency,
    );
    const durable = run.target === "send-spread" || run.target === "send-one-inbox";
    if (durable && notify) {
      limits.push({
        what: `INSERT+NOTIFY x${concurrency}`,
        value: notify.commitsPerSec,
        ratio: ratio(run.callsPerSec, notify.commitsPerSec),
      });
    }
    const raw = of("raw-http2", run.shape);
    const target =
      durable && run.shape.connections === 64 && run.shape.streams === 1
        ? ({ op: ">=", value: H2LOAD_TARGETS.sendsPerSecAt64 } as const)
        : run.target === "send-refused" && raw
          ? ({
              op: ">=",
              value: Math.round(raw.callsPerSec * H2LOAD_TARGETS.refusedShareOfRaw),
            } as const)
          : undefined;
    const healthy = run.failed === 0 && run.wrongOutcome === 0 && run.calls > 0;
    return {
      scenario: "h2load",
      figure: runLabel(run),
      value: run.callsPerSec,
      unit: durable ? "sends/s" : "calls/s",
      ...(target ? { target, met: healthy && run.callsPerSec >= target.value } : {}),
      limits,
      note: [
        target && run.target === "send-refused"
          ? `target ${H2LOAD_TARGETS.refusedShareOfRaw}x raw node:http2`
          : "",
        `call mean ${run.meanCallMs} ms`,
        `server CPU ${run.cpu.serverUsPerCall} µs/call (${run.cpu.serverCoreShare} core)`,
        `h2load CPU ${run.cpu.loadGeneratorUsPerCall} µs/call (${run.cpu.loadGeneratorCoreShare} core, ${run.processes} process${run.processes === 1 ? "" : "es"})`,
        `PostgreSQL CPU ${run.cpu.postgresUsPerCall} µs/call (${run.cpu.postgresCoreShare} core)`,
        machineCeiling(run),
        run.serverCounted
          ? `server counted ${run.serverCounted.ok} ok, ${run.serverCounted.invalidArgument} invalid_argument, ${run.serverCounted.other} other`
          : "",
        run.failed ? `${run.failed} streams failed` : "",
        run.wrongOutcome ? `${run.wrongOutcome} calls with the wrong outcome` : "",
      ]
        .filter(Boolean)
        .join("; "),
    };
  });
}

/**
 * What one call costs the whole machine (server + PostgreSQL + h2load CPU) and the calls a
 * second the machine's cores could carry at that cost: the bound when every process is busy.
 */
function machineCeiling(run: H2loadThroughputRun): string {
  const { serverUsPerCall, postgresUsPerCall, loadGeneratorUsPerCall } = run.cpu;
  if (serverUsPerCall === null || postgresUsPerCall === null || loadGeneratorUsPerCall === null) {
    return "";
  }
  const total = serverUsPerCall + postgresUsPerCall + loadGeneratorUsPerCall;
  const cores = os.cpus().length;
  const ceiling = Math.round((cores * 1e6) / total);
  return `machine CPU ${total} µs/call: ${cores} cores carry at most ${ceiling.toLocaleString("en-US")}/s`;
}

const PERCENTILES = [
  ["p50", "p50Ms"],
  ["p99", "p99Ms"],
  ["p99.9", "p999Ms"],
] as const;

/** Send -> delivered at 1,000/s from h2load's rate mode, beside the Node generator's. */
export function h2loadLatencyFigures(s: Scenarios, base: BaselineResult | undefined): Figure[] {
  if (s["h2load-latency"].status !== "ok") return [];
  const run = s["h2load-latency"].result;
  const node =
    s.latency.status === "ok"
      ? s.latency.result.runs.find((r) => r.ratePerSec === run.ratePerSec)
      : undefined;
  const commit = base?.runs.find((r) => r.statement === "insert" && r.concurrency === 1)?.latency;
  // Every send stored and delivered, at the rate asked: otherwise the percentiles leave some out.
  const healthy =
    run.answered === run.sent &&
    run.stored >= run.answered &&
    run.undelivered === 0 &&
    run.achievedPerSec >= run.ratePerSec * 0.95;
  const problems = [
    run.answered < run.sent ? `${run.sent - run.answered} not answered` : "",
    run.stored < run.answered ? `${run.answered - run.stored} answered but not stored` : "",
    run.undelivered ? `${run.undelivered} undelivered` : "",
    run.achievedPerSec < run.ratePerSec * 0.95 ? `h2load reached only ${run.achievedPerSec}/s` : "",
  ].filter(Boolean);
  const rate = run.ratePerSec.toLocaleString("en-US");
  return PERCENTILES.map(([label, key]): Figure => {
    const value = run.deliver.count > 0 ? run.deliver[key] : null;
    const target =
      label === "p99" && run.ratePerSec === 1_000
        ? ({ op: "<=", value: H2LOAD_TARGETS.p99DeliverAt1000Ms } as const)
        : undefined;
    const limits: Limit[] = [];
    if (node && node.deliver.count > 0 && value !== null) {
      limits.push({
        what: `Node generator ${label}`,
        value: node.deliver[key],
        ratio: ratio(value, node.deliver[key]),
      });
    }
    if (commit && value !== null) {
      limits.push({
        what: `one-row commit ${label}`,
        value: commit[key],
        ratio: ratio(value, commit[key]),
      });
    }
    const d = run.serverLoopDelay;
    return {
      scenario: "h2load-latency",
      figure: `${label} send->deliver @${rate}/s (h2load --rps)`,
      value,
      unit: "ms",
      ...(target ? { target, met: healthy && value !== null && value <= target.value } : {}),
      limits,
      note: [
        label === "p50"
          ? `${run.deliver.count} msgs measured to ${run.receivers} receivers; h2load started ${run.achievedPerSec}/s, ${run.loadGenerator.coreShare} core`
          : "",
        label === "p99"
          ? `Send answered p99 ${run.sendAck.p99Ms} ms` +
            (d ? `; server event-loop delay p99 ${d.p99Ms} ms, max ${d.maxMs} ms` : "")
          : "",
        label === "p99.9" && run.reordered ? `${run.reordered} matched out of order` : "",
        ...problems,
      ]
        .filter(Boolean)
        .join("; "),
    };
  });
}
