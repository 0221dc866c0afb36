import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { SendRequestSchema } from "../../gen/team/v1/team_service_pb.js";
import { sleep } from "../bounded.js";
import { Connections } from "../connections.js";
import { epochClock } from "../epoch-clock.js";
import { writeGrpcBody } from "../h2load/grpc-body.js";
import { type LoggedRequest, readH2loadLog, runH2load } from "../h2load/run.js";
import { LatencyHistogram, type LatencySummary } from "../histogram.js";
import type { LoopDelay } from "../loop-delay.js";
import { sampleValue, scrapeMetrics } from "../server-metrics.js";
import { openLiveStreams } from "../subscriber.js";
import { createBenchTeam, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

export interface H2loadLatencyResult {
  ratePerSec: number;
  receivers: number;
  /** Requests started per second, first start to last (h2load's log): below the rate, it fell behind. */
  achievedPerSec: number;
  /** Requests h2load sent (all of them, warm-up included). */
  sent: number;
  /** Of those, answered with HTTP 200 (h2load's count). */
  answered: number;
  /** Sends the server counted as stored (team_rpc_calls_total, Send, ok) meanwhile. */
  stored: number;
  /** Answered but never delivered within the drain time. */
  undelivered: number;
  /**
   * Matched deliveries that came before their request started: the k-th request of a
   * receiver is matched with the k-th envelope of its inbox (h2load's body carries no
   * number), so a send committed ahead of an earlier one of the same connection swaps two
   * neighbours. Counted, and recorded as 1 µs.
   */
  reordered: number;
  /** Request start (h2load's log) -> the subscriber has the envelope, the measured window. */
  deliver: LatencySummary;
  /** Request start -> the response (h2load's log): the Send's time, measured window. */
  sendAck: LatencySummary;
  /** The server's event-loop delay over the run. */
  serverLoopDelay: LoopDelay | null;
  loadGenerator: { cpuMs: number | null; coreShare: number | null };
}

const SEND_PATH = "/team.v1.TeamService/Send";

/**
 * Send -> delivered at a fixed rate with h2load's rate mode as the sender (`--rps`: open
 * loop, a request is started on time while up to `maxStreamsPerReceiver` are in flight),
 * so a stall of this process cannot hold the sends back. The lead sends to `receivers`
 * teammates, one h2load process (one connection) each, all subscribed live from this
 * process, which timestamps each envelope on arrival (the epoch clock h2load logs with).
 */
export async function runH2loadLatency(ctx: ScenarioContext): Promise<H2loadLatencyResult> {
  const p = ctx.profile.h2loadLatency;
  const { signal } = ctx;
  const dir = await mkdtemp(join(os.tmpdir(), "tp-h2load-latency-"));
  const senders = new Connections(ctx.url, 1);
  const listeners = new Connections(ctx.url, 2);
  try {
    await Promise.all([senders.open(), listeners.open()]);
    const team = await createBenchTeam(senders, ctx.runId, "h2load-latency", p.receivers, signal);
    const tag = `${ctx.runId}-h2load`;
    const toEpochMs = epochClock();
    // Arrival times per receiver, in inbox order (a stream delivers in seq order).
    const arrivals: number[][] = team.teammates.map(() => []);
    const streams = await openLiveStreams(
      team,
      listeners,
      senders,
      (mate, env, at) => {
        if (env.message?.kind.case === "text" && env.message.kind.value === tag) {
          arrivals[mate]?.push(toEpochMs(at));
        }
      },
      signal,
    );
    const perReceiver = p.ratePerSec / p.receivers;
    const requests = Math.round(perReceiver * (p.warmupSec + p.measureSec));
    const loads = await Promise.all(
      team.teammates.map(async (mate, i) => ({
        bodyFile: await writeGrpcBody(dir, `to-${i}`, SendRequestSchema, {
          to: mate.name,
          message: text(tag),
        }),
        logFile: join(dir, `log-${i}.tsv`),
      })),
    );

    const storedBefore = await storedSends(ctx);
    void ctx.serverLoopDelay().catch(() => null); // resets it
    const summaries = await Promise.all(
      loads.map((load) =>
        runH2load({
          url: ctx.url,
          path: SEND_PATH,
          bodyFile: load.bodyFile,
          headers: {
            "content-type": "application/grpc",
            te: "trailers",
            authorization: `Bearer ${team.lead.token}`,
          },
          connections: 1,
          streams: p.maxStreamsPerReceiver,
          requests,
          ratePerConnection: perReceiver,
          logFile: load.logFile,
          signal,
        }),
      ),
    );
    const serverLoopDelay = await ctx.serverLoopDelay().catch(() => null);
    const logs = await Promise.all(loads.map((l) => readH2loadLog(l.logFile)));
    const answeredBy = logs.map((log) => log.filter((r) => r.status === 200));

    // Drain: every answered send delivered, or the drain time is up.
    const drainEnd = performance.now() + p.drainMs;
    const pending = () => answeredBy.some((rows, i) => (arrivals[i]?.length ?? 0) < rows.length);
    while (!signal.aborted && performance.now() < drainEnd && pending()) {
      await sleep(5, signal).catch(() => {});
    }
    signal.throwIfAborted();
    const stored = (await storedSends(ctx)) - storedBefore;
    for (const s of streams) s.close();

    const firstStart = Math.min(...logs.map((log) => log[0]?.startMs ?? Number.POSITIVE_INFINITY));
    const measured = matchDeliveries(answeredBy, arrivals, firstStart + p.warmupSec * 1000);
    const answered = answeredBy.reduce((n, rows) => n + rows.length, 0);
    const delivered = arrivals.reduce((n, a) => n + a.length, 0);
    const seconds = Math.max(...summaries.map((s) => s.elapsedMs)) / 1000;
    const cpuMs = summaries.every((s) => s.cpuMs !== null)
      ? summaries.reduce((n, s) => n + (s.cpuMs ?? 0), 0)
      : null;
    const result: H2loadLatencyResult = {
      ratePerSec: p.ratePerSec,
      receivers: p.receivers,
      achievedPerSec: startedPerSec(logs),
      sent: logs.reduce((n, log) => n + log.length, 0),
      answered,
      stored,
      undelivered: Math.max(0, answered - delivered),
      reordered: measured.reordered,
      deliver: measured.deliver.summary(),
      sendAck: measured.sendAck.summary(),
      serverLoopDelay,
      loadGenerator: {
        cpuMs,
        coreShare: cpuMs === null ? null : Math.round((cpuMs / 1000 / seconds) * 100) / 100,
      },
    };
    const d = result.deliver;
    ctx.log(
      `  h2load latency @${p.ratePerSec}/s: p50 ${d.p50Ms} ms, p99 ${d.p99Ms} ms, ` +
        `p99.9 ${d.p999Ms} ms (${result.answered}/${result.sent} answered, ${result.stored} stored, ` +
        `${result.undelivered} undelivered, ${result.reordered} reordered, h2load at ` +
        `${result.achievedPerSec}/s, ${result.loadGenerator.coreShare} core)`,
    );
    return result;
  } finally {
    senders.close();
    listeners.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The k-th answered request of each receiver with the k-th envelope of its inbox. */
function matchDeliveries(
  answeredBy: LoggedRequest[][],
  arrivals: number[][],
  measureFromMs: number,
): { deliver: LatencyHistogram; sendAck: LatencyHistogram; reordered: number } {
  const deliver = new LatencyHistogram();
  const sendAck = new LatencyHistogram();
  let reordered = 0;
  answeredBy.forEach((rows, i) => {
    const times = arrivals[i] ?? [];
    rows.forEach((row, k) => {
      if (row.startMs < measureFromMs) return;
      sendAck.recordMs(row.durationMs);
      const at = times[k];
      if (at === undefined) return;
      if (at < row.startMs) reordered++;
      deliver.recordMs(Math.max(0, at - row.startMs));
    });
  });
  return { deliver, sendAck, reordered };
}

function startedPerSec(logs: LoggedRequest[][]): number {
  const starts = logs.flat().map((r) => r.startMs);
  if (starts.length < 2) return 0;
  const spanMs = Math.max(...starts) - Math.min(...starts);
  return spanMs > 0 ? Math.round(((starts.length - 1) * 1000) / spanMs) : 0;
}

async function storedSends(ctx: ScenarioContext): Promise<number> {
  const metrics = await scrapeMetrics(ctx.url, ctx.signal);
  return sampleValue(metrics, 'team_rpc_calls_total{method="Send",code="ok"}');
}
