import { sleep, within } from "../bounded.js";
import { as, Connections } from "../connections.js";
import { median, round } from "../histogram.js";
import { openStream } from "../subscriber.js";
import { createBenchTeam, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

export interface FanoutRound {
  /** Send issued -> the last subscriber has the message. */
  lastMs: number;
  /** Send issued -> the first subscriber has it. */
  firstMs: number;
  /** Send issued -> half of the subscribers have it. */
  p50Ms: number;
  /** Send issued -> Send returned (all copies committed). */
  sendAckMs: number;
  /** Subscribers that did not have it within the round's timeout. */
  missed: number;
}

export interface FanoutResult {
  subscribers: number;
  connections: number;
  rounds: FanoutRound[];
  /** Median over rounds of lastMs: the figure compared with the target. */
  lastMedianMs: number;
  lastMaxMs: number;
  sendAckMedianMs: number;
}

/**
 * One broadcast (`to: "*"`) from the lead to N teammates, each with a live Subscribe
 * stream; the time until the last of them has it. Repeated for a few rounds; a first
 * broadcast (not measured) proves every stream is live and warms the path.
 */
export async function runFanout(ctx: ScenarioContext): Promise<FanoutResult> {
  const p = ctx.profile.fanout;
  const { signal } = ctx;
  const control = new Connections(ctx.url, 2);
  const listeners = new Connections(ctx.url, p.connections);
  try {
    await Promise.all([control.open(), listeners.open()]);
    const team = await createBenchTeam(control, ctx.runId, "fanout", p.subscribers, signal);
    const n = team.teammates.length;
    const arrivals = new Float64Array(n);
    let expected = "";
    let arrived = 0;
    let allArrived: () => void = () => {};
    const streams = team.teammates.map((mate, i) =>
      openStream(
        listeners.client(i),
        mate.token,
        (env, at) => {
          const m = env.message?.kind;
          if (m?.case !== "text" || m.value !== expected || arrivals[i]) return;
          arrivals[i] = at;
          if (++arrived === n) allArrived();
        },
        { afterSeq: 0n, signal },
      ),
    );
    await control.client(0).send({ to: "*", message: text("ready") }, as(team.lead.token));
    await within(
      `all ${n} streams to be live`,
      p.roundTimeoutMs * 3,
      Promise.all(streams.map((s) => s.firstEnvelope)),
      signal,
    );

    const rounds: FanoutRound[] = [];
    for (let r = 0; r < p.rounds; r++) {
      arrivals.fill(0);
      arrived = 0;
      expected = `round-${r}`;
      const everyone = new Promise<void>((resolve) => {
        allArrived = resolve;
      });
      const started = performance.now();
      await control.client(r).send({ to: "*", message: text(expected) }, as(team.lead.token));
      const sendAckMs = performance.now() - started;
      await within(`round ${r} to reach every subscriber`, p.roundTimeoutMs, everyone, signal)
        // A round that misses some subscribers is reported (missed), not fatal.
        .catch((err) => {
          if (signal.aborted) throw err;
        });
      const times = [...arrivals].filter((t) => t > 0).map((t) => t - started);
      times.sort((a, b) => a - b);
      rounds.push({
        lastMs: round(times.at(-1) ?? Number.NaN),
        firstMs: round(times[0] ?? Number.NaN),
        p50Ms: round(median(times)),
        sendAckMs: round(sendAckMs),
        missed: n - times.length,
      });
      const last = rounds.at(-1);
      ctx.log(
        `  fan-out round ${r}: last ${last?.lastMs} ms, first ${last?.firstMs} ms, ` +
          `send returned ${last?.sendAckMs} ms${last?.missed ? `, ${last.missed} missed` : ""}`,
      );
      await sleep(200, signal);
    }
    for (const s of streams) s.close();
    return {
      subscribers: n,
      connections: p.connections,
      rounds,
      lastMedianMs: round(median(rounds.map((r) => r.lastMs))),
      lastMaxMs: Math.max(...rounds.map((r) => r.lastMs)),
      sendAckMedianMs: round(median(rounds.map((r) => r.sendAckMs))),
    };
  } finally {
    control.close();
    listeners.close();
  }
}
