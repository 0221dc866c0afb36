import type { IntervalHistogram } from "node:perf_hooks";

/** How long work waited for its turn on a process's one thread. */
export interface LoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;

/** A monitorEventLoopDelay() histogram, in milliseconds. */
export function summarizeLoopDelay(h: IntervalHistogram): LoopDelay {
  return { p50Ms: ms(h.percentile(50)), p99Ms: ms(h.percentile(99)), maxMs: ms(h.max) };
}
