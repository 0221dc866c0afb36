/**
 * How often a refusal makes a log line. A refusal is the client's business, already counted
 * by /metrics under its rule and, for protocol steps, in the journal; one log line per
 * refused call let a flood of bad calls cost more CPU than good ones (a JSON line written
 * per call) and bury the log. So each kind of refusal (method and code) is logged at most
 * once per interval, and that line says how many like it were left out since the last one.
 */
export interface RefusalLog {
  /**
   * Whether to log this refusal now: the number of refusals of the same kind left out
   * since the last line (0 or more), or undefined to leave this one out.
   */
  take(kind: string): number | undefined;
}

/** Kinds remembered at most; past it the oldest are forgotten (and logged again). */
const MAX_KINDS = 1_000;

export function createRefusalLog(intervalMs = 1_000, now = () => performance.now()): RefusalLog {
  const kinds = new Map<string, { until: number; left: number }>();
  return {
    take(kind) {
      const t = now();
      const seen = kinds.get(kind);
      if (seen && t < seen.until) {
        seen.left++;
        return undefined;
      }
      const left = seen?.left ?? 0;
      kinds.delete(kind);
      if (kinds.size >= MAX_KINDS) {
        const oldest = kinds.keys().next().value;
        if (oldest !== undefined) kinds.delete(oldest);
      }
      kinds.set(kind, { until: t + intervalMs, left: 0 });
      return left;
    },
  };
}
