/**
 * A deadline that counts only time in which this process's event loop was free to run.
 *
 * A ping that "took" 1 s may have been answered in a millisecond while our own loop was busy
 * (a flood of calls, a long synchronous task): its reply sat unread in the socket, and when
 * the loop came back the deadline's timer ran before the reply was read (Node runs timers
 * before I/O). Counted like that, health flipped to NOT_SERVING under a flood of calls,
 * for no fault of the database.
 *
 * So the deadline advances in steps of `stepMs`; a step's timer that fires late was held
 * up by the loop, and the delay beyond its step is not counted. When the deadline is
 * reached, it expires only after the I/O already received was read (setImmediate runs
 * after the poll phase), so a reply that arrived during a stall still wins.
 */
export interface LoopFreeDeadline {
  /** Resolves once `ms` of loop-free time have passed. */
  readonly expired: Promise<void>;
  cancel(): void;
}

export function startLoopFreeDeadline(ms: number, stepMs = 50): LoopFreeDeadline {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let counted = 0;
  const expired = new Promise<void>((resolve) => {
    const arm = () => {
      const armed = Math.min(stepMs, ms - counted);
      const at = performance.now();
      timer = setTimeout(() => {
        // Late by more than the step: the loop was busy meanwhile, not waiting for us.
        counted += Math.min(performance.now() - at, armed);
        if (counted >= ms) immediate = setImmediate(resolve);
        else arm();
      }, armed);
      timer.unref();
    };
    arm();
  });
  return {
    expired,
    cancel() {
      clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
    },
  };
}
