import hdr from "hdr-histogram-js";

/** Percentiles of one latency histogram, in milliseconds. */
export interface LatencySummary {
  count: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  meanMs: number;
}

// Values are kept in microseconds: HDR histograms take integers, and a millisecond is too
// coarse for sub-millisecond commits on a fast disk.
const US_PER_MS = 1000;

/**
 * An HDR histogram of latencies: 3 significant digits from 1 µs to an hour, so p99.9 of a
 * long tail is as exact as p50, and memory stays fixed however many values are recorded.
 */
export class LatencyHistogram {
  private readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600 * 1000 * US_PER_MS,
    numberOfSignificantValueDigits: 3,
  });

  recordMs(ms: number): void {
    this.histogram.recordValue(Math.max(1, Math.round(ms * US_PER_MS)));
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  summary(): LatencySummary {
    const h = this.histogram;
    const at = (p: number) => round(h.getValueAtPercentile(p) / US_PER_MS);
    return {
      count: h.totalCount,
      p50Ms: at(50),
      p90Ms: at(90),
      p99Ms: at(99),
      p999Ms: at(99.9),
      maxMs: round(h.maxValue / US_PER_MS),
      meanMs: round(h.mean / US_PER_MS),
    };
  }
}

/** Three decimals: microseconds, which is what the histogram resolves. */
export const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** The median of a few samples (repeated runs of one measurement). */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
