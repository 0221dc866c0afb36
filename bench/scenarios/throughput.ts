import { Code, ConnectError } from "@connectrpc/connect";
import { sleep } from "../bounded.js";
import { as, Connections } from "../connections.js";
import { LatencyHistogram, type LatencySummary } from "../histogram.js";
import { type BenchTeam, createBenchTeam, LEAD_NAME, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

/**
 * spread: each sender writes round-robin to the other teammates' inboxes; one-inbox: all to
 * the lead's; rpc-floor: the same Send call without a message, refused by the rules before
 * any database work (the token is cached), so what is left is the cost of one gRPC call on
 * both ends: the ceiling for sends on this machine with this load generator.
 */
export type ThroughputPattern = "spread" | "one-inbox" | "rpc-floor";

export interface ThroughputRun {
  pattern: ThroughputPattern;
  concurrency: number;
  /** Sends that returned (each one durable) per second of the measured window. */
  sendsPerSec: number;
  sends: number;
  errors: number;
  firstError?: string;
  /** Time of one Send, as each sender waits for it before the next. */
  latency: LatencySummary;
  /**
   * CPU per send in the measured window: the server process's, and this (load-generating)
   * process's. Both share the machine with PostgreSQL; a server near 1,000 ms of CPU per
   * second is bound by its one JavaScript thread.
   */
  cpu: {
    serverUsPerSend: number | null;
    benchUsPerSend: number | null;
    serverCoreShare: number | null;
  };
}

export interface ThroughputResult {
  inboxes: number;
  runs: ThroughputRun[];
}

/**
 * Durable sends per second from 1, 8 and 64 concurrent senders (distinct teammates, each
 * in a closed loop: send, await, send), spread over many inboxes and all into the lead's
 * inbox, the hot spot when a whole team reports to its lead.
 */
export async function runThroughput(ctx: ScenarioContext): Promise<ThroughputResult> {
  const p = ctx.profile.throughput;
  const most = Math.max(...ctx.profile.concurrency);
  const inboxes = Math.max(p.inboxes, most);
  const connections = new Connections(ctx.url, p.maxConnections);
  try {
    await connections.open();
    const team = await createBenchTeam(connections, ctx.runId, "throughput", inboxes, ctx.signal);
    const runs: ThroughputRun[] = [];
    for (const pattern of ["spread", "one-inbox", "rpc-floor"] as const) {
      for (const concurrency of ctx.profile.concurrency) {
        const run = await closedLoop(team, connections, pattern, concurrency, ctx);
        runs.push(run);
        ctx.log(
          `  throughput ${pattern} x${concurrency}: ${run.sendsPerSec} sends/s, ` +
            `p50 ${run.latency.p50Ms} ms, p99 ${run.latency.p99Ms} ms, ` +
            `server CPU ${run.cpu.serverUsPerSend} µs/send (${run.cpu.serverCoreShare} core), ` +
            `bench CPU ${run.cpu.benchUsPerSend} µs/send` +
            (run.errors ? `, ${run.errors} errors (first: ${run.firstError})` : ""),
        );
      }
    }
    return { inboxes, runs };
  } finally {
    connections.close();
  }
}

async function closedLoop(
  team: BenchTeam,
  connections: Connections,
  pattern: ThroughputPattern,
  concurrency: number,
  ctx: ScenarioContext,
): Promise<ThroughputRun> {
  const p = ctx.profile.throughput;
  const { signal } = ctx;
  const mates = team.teammates;
  const histogram = new LatencyHistogram();
  const measureFrom = performance.now() + p.warmupSec * 1000;
  const end = measureFrom + p.measureSec * 1000;
  let sends = 0;
  let errors = 0;
  let firstError: string | undefined;
  // CPU is read at the window's edges, by timers, while the senders run.
  const cpuAt = async (at: number) => {
    // undefined when the scenario is aborted first (never a rejection left unhandled).
    if (
      !(await sleep(Math.max(0, at - performance.now()), signal).then(
        () => true,
        () => false,
      ))
    ) {
      return undefined;
    }
    return { server: await ctx.serverCpuMs(), bench: process.cpuUsage() };
  };
  const cpuFrom = cpuAt(measureFrom);
  const cpuTo = cpuAt(end);
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const sender = mates[i] ?? team.lead;
      const client = connections.client(i);
      for (let k = 0; !signal.aborted; k++) {
        const started = performance.now();
        if (started >= end) break;
        // Never to itself: the k-th message goes to the k-th of the other teammates.
        const to =
          pattern === "one-inbox"
            ? LEAD_NAME
            : (mates[(i + 1 + (k % (mates.length - 1))) % mates.length]?.name ?? LEAD_NAME);
        try {
          if (pattern === "rpc-floor") await refusedSend(client, sender.token, signal);
          else await client.send({ to, message: text(`t${i}-${k}`) }, as(sender.token, { signal }));
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          await sleep(10, signal).catch(() => {}); // a failing server is not hammered
          continue;
        }
        const done = performance.now();
        if (done >= measureFrom && done < end) {
          sends++;
          histogram.recordMs(done - started);
        }
      }
    }),
  );
  signal.throwIfAborted();
  return {
    cpu: cpuPerSend(await cpuFrom, await cpuTo, sends, p.measureSec),
    pattern,
    concurrency,
    sendsPerSec: Math.round(sends / p.measureSec),
    sends,
    errors,
    ...(firstError ? { firstError } : {}),
    latency: histogram.summary(),
  };
}

/** A Send with no message: refused with InvalidArgument by the rules, no database work. */
async function refusedSend(
  client: ReturnType<Connections["client"]>,
  token: string,
  signal: AbortSignal,
): Promise<void> {
  const err = await client.send({ to: LEAD_NAME }, as(token, { signal })).then(
    () => new Error("a Send without a message was accepted"),
    (e: unknown) => ConnectError.from(e),
  );
  if (!(err instanceof ConnectError && err.code === Code.InvalidArgument)) throw err;
}

function cpuPerSend(
  from: { server: number | undefined; bench: NodeJS.CpuUsage } | undefined,
  to: { server: number | undefined; bench: NodeJS.CpuUsage } | undefined,
  sends: number,
  seconds: number,
): ThroughputRun["cpu"] {
  if (!from || !to || sends === 0) {
    return { serverUsPerSend: null, benchUsPerSend: null, serverCoreShare: null };
  }
  const serverMs =
    from.server !== undefined && to.server !== undefined ? to.server - from.server : undefined;
  const benchUs = to.bench.user + to.bench.system - from.bench.user - from.bench.system;
  return {
    serverUsPerSend: serverMs === undefined ? null : Math.round((serverMs * 1000) / sends),
    benchUsPerSend: Math.round(benchUs / sends),
    serverCoreShare: serverMs === undefined ? null : Math.round(serverMs / seconds / 10) / 100,
  };
}
