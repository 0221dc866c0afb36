/**
 * AwaitRequest's waiting room: callers waiting for a request to leave pending, woken in
 * this process right after the transition commits. A wake-up carries no data: the waiter
 * reads the record again, so an extra wake-up only costs a re-read. Transitions committed by
 * another server process arrive through the cluster bus; when its listener reconnects (its
 * events may have been lost) every waiter is woken. Waiters never poll: a waiter
 * re-reading once a second costs a transaction a second, and there may be many of them.
 */
export interface RequestWaiters {
  /** Resolves on notify(requestId), after `timeoutMs`, or when `signal` aborts. */
  wait(requestId: string, timeoutMs: number, signal: AbortSignal): Promise<void>;
  notify(requestId: string): void;
  /** Wakes every waiter: transitions may have happened that nobody was told of. */
  notifyAll(): void;
  /**
   * A graceful stop began: every waiter is woken and answers with what it has, and new
   * waits end at once, so a long AwaitRequest does not hold the stop for its whole grace.
   */
  close(): void;
  readonly closed: boolean;
  /** Calls waiting now (for tests and metrics). */
  readonly size: number;
}

export function createRequestWaiters(): RequestWaiters {
  const waiting = new Map<string, Set<() => void>>();
  let closed = false;
  const notifyAll = () => {
    for (const set of [...waiting.values()]) for (const done of [...set]) done();
  };
  return {
    wait(requestId, timeoutMs, signal) {
      return new Promise<void>((resolve) => {
        if (closed) return resolve();
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
    notifyAll,
    close() {
      closed = true;
      notifyAll();
    },
    get closed() {
      return closed;
    },
    get size() {
      let n = 0;
      for (const set of waiting.values()) n += set.size;
      return n;
    },
  };
}
