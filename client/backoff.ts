export interface BackoffOptions {
  /** The first delay's ceiling. Default 100 ms. */
  initialMs?: number;
  /** No delay exceeds this. Default 5 s. */
  maxMs?: number;
  /** [0, 1); tests pass a fixed one. Default Math.random. */
  random?: () => number;
}

export interface Backoff {
  /** The delay before the next attempt; each call doubles the ceiling up to maxMs. */
  next(): number;
  /** After a success: the next delay starts small again. */
  reset(): void;
  /** Attempts since the last reset. */
  readonly attempts: number;
}

/**
 * Exponential backoff with "equal jitter": half the ceiling, plus a random share of the
 * other half. The random half keeps many clients that lost the same server from reconnecting
 * in lockstep; the fixed half keeps one client from retrying in a tight loop.
 */
export function createBackoff(options: BackoffOptions = {}): Backoff {
  const initialMs = options.initialMs ?? 100;
  const maxMs = options.maxMs ?? 5_000;
  const random = options.random ?? Math.random;
  let attempts = 0;
  return {
    next() {
      const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempts, 30));
      attempts++;
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    },
    reset() {
      attempts = 0;
    },
    get attempts() {
      return attempts;
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
