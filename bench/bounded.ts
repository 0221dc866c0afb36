import { setMaxListeners } from "node:events";

/**
 * Every scenario is bounded in time as well as in count: a server that stalls (or a bug in
 * the bench) ends that scenario with an error instead of hanging the run.
 */

export class BudgetExceeded extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: exceeded its time budget of ${(ms / 1000).toFixed(0)} s`);
    this.name = "BudgetExceeded";
  }
}

/**
 * Runs `fn` with a signal that aborts after `budgetMs`; fails with BudgetExceeded if `fn`
 * has not settled by then (fn is expected to stop its work when the signal aborts).
 */
export async function withBudget<T>(
  what: string,
  budgetMs: number,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  // Every open stream and call of the scenario listens to it: thousands, by design.
  setMaxListeners(0, controller.signal);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new BudgetExceeded(what, budgetMs);
      controller.abort(err);
      reject(err);
    }, budgetMs);
  });
  try {
    return await Promise.race([fn(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
    // Whatever fn left running (streams, loops) stops now.
    controller.abort(new Error(`${what}: finished`));
  }
}

/** Resolves after `ms`, or rejects early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Waits for `promise`, failing with a message naming `what` after `ms` or on abort. */
export async function within<T>(
  what: string,
  ms: number,
  promise: Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    onAbort = () => reject(signal?.reason ?? new Error(`aborted waiting for ${what}`));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Runs `task` for each item with at most `concurrency` at a time (setup work such as adding
 * a thousand members, which one at a time would take longer than the measurement).
 */
export async function forEachLimited<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T, index: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      signal?.throwIfAborted();
      const i = next++;
      await task(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
