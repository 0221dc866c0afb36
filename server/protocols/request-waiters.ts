/**
 * AwaitRequest's waiting room: callers waiting for a request to leave pending, woken in
 * this process right after the transition commits. A wake-up carries no data: the waiter
 * reads the record again, so a missed or extra wake-up only costs a re-read (and waiters
 * also re-read on a timer, for transitions committed by another server process).
 */
export interface RequestWaiters {
  /** Resolves on notify(requestId), after `timeoutMs`, or when `signal` aborts. */
  wait(requestId: string, timeoutMs: number, signal: AbortSignal): Promise<void>;
  notify(requestId: string): void;
}

export function createRequestWaiters(): RequestWaiters {
  const waiting = new Map<string, Set<() => void>>();
  return {
    wait(requestId, timeoutMs, signal) {
      return new Promise<void>((resolve) => {
        const set = waiting.get(requestId) ?? new Set();
        waiting.set(requestId, set);
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          set.delete(done);
          if (set.size === 0 && waiting.get(requestId) === set) waiting.delete(requestId);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        signal.addEventListener("abort", done, { once: true });
        set.add(done);
      });
    },
    notify(requestId) {
      for (const done of [...(waiting.get(requestId) ?? [])]) done();
    },
  };
}
