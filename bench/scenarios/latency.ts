import { setMaxListeners } from "node:events";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { sleep } from "../bounded.js";
import { as, Connections } from "../connections.js";
import { LatencyHistogram, type LatencySummary, round } from "../histogram.js";
import { type LoopDelay, summarizeLoopDelay } from "../loop-delay.js";
import { openLiveStreams } from "../subscriber.js";
import { type BenchTeam, createBenchTeam, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

export interface LatencyRun {
  ratePerSec: number;
  /** Messages scheduled for the measured window (after warm-up). */
  scheduled: number;
  /** Of those, sent (fewer when the run stopped saturated). */
  sent: number;
  delivered: number;
  /** Sent, the send succeeded, but never delivered within the drain time. */
  undelivered: number;
  sendErrors: number;
  /** The first send error's message, to tell an overload (pool timeout) from a bug. */
  firstError?: string;
  /** Sends answered per second from the first send to the last answer: what the server kept up with. */
  answeredPerSec: number;
  /** Sends awaiting a response reached the cap: the server cannot sustain this rate. */
  saturated: boolean;
  /** How late the load generator itself fired a send (its own health, not the server's). */
  maxFireLagMs: number;
  /** Intended send time -> the subscriber has the envelope. */
  deliver: LatencySummary;
  /** Intended send time -> Send returned (the message is durable). */
  sendAck: LatencySummary;
  /**
   * Event-loop delay during the measured window, of the server and of this process (the
   * load generator): how long work waited for its turn on each one thread.
   */
  loopDelay: { server: LoopDelay | null; loadGenerator: LoopDelay | null };
}

export interface LatencyResult {
  receivers: number;
  runs: LatencyRun[];
}

/**
 * Send -> delivered to a live subscriber, open loop: sends are fired by the clock at a
 * fixed rate whether or not earlier ones have returned, and each latency is measured from
 * the time the send was *scheduled*, so a server (or load generator) that falls behind shows
 * in the figures instead of slowing the load (no coordinated omission).
 *
 * The lead sends text round-robin to `receivers` teammates, each subscribed live.
 */
export async function runLatency(ctx: ScenarioContext): Promise<LatencyResult> {
  const p = ctx.profile.latency;
  const { signal } = ctx;
  const senders = new Connections(ctx.url, p.sendConnections);
  const listeners = new Connections(ctx.url, 2);
  try {
    await Promise.all([senders.open(), listeners.open()]);
    const team = await createBenchTeam(senders, ctx.runId, "latency", p.receivers, signal);
    // Each run installs its own handler; envelopes carry "<tag><index>" as their text.
    let onText: (value: string, atMs: number) => void = () => {};
    const streams = await openLiveStreams(
      team,
      listeners,
      senders,
      (_, env, at) => {
        if (env.message?.kind.case === "text") onText(env.message.kind.value, at);
      },
      signal,
    );
    const runs: LatencyRun[] = [];
    for (const rate of p.ratesPerSec) {
      const run = await runAtRate(
        rate,
        team,
        senders,
        (h) => {
          onText = h;
        },
        ctx,
      );
      runs.push(run);
      const d = run.deliver;
      ctx.log(
        `  latency @${rate}/s: ` +
          (d.count > 0
            ? `p50 ${d.p50Ms} ms, p99 ${d.p99Ms} ms, p99.9 ${d.p999Ms} ms`
            : "nothing delivered in the measured window") +
          ` (${run.delivered}/${run.scheduled} delivered, ` +
          `${run.answeredPerSec} sends answered/s${run.saturated ? ", SATURATED" : ""}` +
          `${run.firstError ? `, first error: ${run.firstError}` : ""})`,
      );
      await sleep(500, signal); // let the server's queues empty between rates
    }
    for (const s of streams) s.close();
    return { receivers: p.receivers, runs };
  } finally {
    senders.close();
    listeners.close();
  }
}

async function runAtRate(
  rate: number,
  team: BenchTeam,
  senders: Connections,
  setHandler: (h: (value: string, atMs: number) => void) => void,
  ctx: ScenarioContext,
): Promise<LatencyRun> {
  const p = ctx.profile.latency;
  // Sends still unanswered when the drain time is up are cancelled (the bound of last resort:
  // the drain normally waits for every one of them, so none loads the next run).
  const run = new AbortController();
  setMaxListeners(0, run.signal); // one listener per send in flight
  const stopRun = () => run.abort();
  ctx.signal.addEventListener("abort", stopRun, { once: true });
  try {
    return await measureRate(rate, team, senders, setHandler, p, run.signal, ctx);
  } finally {
    ctx.signal.removeEventListener("abort", stopRun);
    stopRun();
    setHandler(() => {});
  }
}

async function measureRate(
  rate: number,
  team: BenchTeam,
  senders: Connections,
  setHandler: (h: (value: string, atMs: number) => void) => void,
  p: ScenarioContext["profile"]["latency"],
  signal: AbortSignal,
  ctx: ScenarioContext,
): Promise<LatencyRun> {
  const warm = Math.round(rate * p.warmupSec);
  const total = warm + Math.round(rate * p.measureSec);
  const intervalMs = 1000 / rate;
  const tag = `r${rate}-`;
  const intended = new Float64Array(total);
  const seen = new Uint8Array(total);
  const deliver = new LatencyHistogram();
  const sendAck = new LatencyHistogram();
  let fired = 0;
  let inFlight = 0;
  let delivered = 0;
  let sendErrors = 0;
  let measuredErrors = 0;
  let maxFireLagMs = 0;
  let saturated = false;
  let firstError: string | undefined;
  let answered = 0;
  let lastAnswerAt = 0;

  setHandler((value, at) => {
    if (!value.startsWith(tag)) return;
    const i = Number(value.slice(tag.length));
    if (!(i >= 0 && i < total) || seen[i]) return; // at-least-once: count a redelivery once
    seen[i] = 1;
    if (i >= warm) {
      delivered++;
      deliver.recordMs(at - (intended[i] as number));
    }
  });

  const fire = (i: number, now: number) => {
    maxFireLagMs = Math.max(maxFireLagMs, now - (intended[i] as number));
    inFlight++;
    const to = team.teammates[i % team.teammates.length]?.name ?? "";
    senders
      .client(i)
      .send({ to, message: text(`${tag}${i}`) }, as(team.lead.token, { signal }))
      .then(
        () => {
          answered++;
          lastAnswerAt = performance.now();
          if (i >= warm) sendAck.recordMs(lastAnswerAt - (intended[i] as number));
        },
        (err: Error) => {
          sendErrors++;
          firstError ??= err.message;
          if (i >= warm) measuredErrors++;
        },
      )
      .finally(() => {
        inFlight--;
      });
  };

  // Event-loop delay over the measured window (from the end of the warm-up to the last send).
  const ownDelay = monitorEventLoopDelay({ resolution: 1 });
  let serverDelay: Promise<LoopDelay | null> | undefined;
  let windowStarted = false;
  const windowStarts = () => {
    windowStarted = true;
    void ctx.serverLoopDelay().catch(() => null); // resets it
    ownDelay.enable();
  };
  const windowEnds = () => {
    ownDelay.disable();
    serverDelay = ctx.serverLoopDelay().catch(() => null);
  };

  // The schedule is fixed up front; the timer only decides when to look at it. Sends whose
  // time has come are fired together, each measured from its own scheduled time.
  const start = performance.now() + 20;
  for (let i = 0; i < total; i++) intended[i] = start + i * intervalMs;
  await new Promise<void>((resolve) => {
    const tick = () => {
      if (signal.aborted) return resolve();
      const now = performance.now();
      while (fired < total && (intended[fired] as number) <= now) {
        if (inFlight >= p.maxInFlight) {
          saturated = true;
          return resolve();
        }
        if (fired === warm) windowStarts();
        fire(fired, now);
        fired++;
      }
      if (fired >= total) return resolve();
      setTimeout(tick, Math.max(0, (intended[fired] as number) - performance.now()));
    };
    setTimeout(tick, Math.max(0, start - performance.now()));
  });

  if (fired > warm) windowEnds();
  // A run that saturated during its warm-up has no measured window.
  const loadGenerator = windowStarted ? summarizeLoopDelay(ownDelay) : null;

  // Drain: wait for every sent message to be delivered (or its send to fail), bounded.
  const sentMeasured = Math.max(0, fired - warm);
  const drainEnd = performance.now() + p.drainMs;
  while (
    !signal.aborted &&
    performance.now() < drainEnd &&
    (inFlight > 0 || delivered + measuredErrors < sentMeasured)
  ) {
    await sleep(5, signal).catch(() => {});
  }
  signal.throwIfAborted();
  return {
    ratePerSec: rate,
    scheduled: total - warm,
    sent: sentMeasured,
    delivered,
    undelivered: sentMeasured - delivered - measuredErrors,
    sendErrors,
    ...(firstError ? { firstError } : {}),
    answeredPerSec:
      lastAnswerAt > start ? Math.round((answered * 1000) / (lastAnswerAt - start)) : 0,
    saturated,
    maxFireLagMs: round(maxFireLagMs),
    deliver: deliver.summary(),
    sendAck: sendAck.summary(),
    loopDelay: { server: (await serverDelay) ?? null, loadGenerator },
  };
}
