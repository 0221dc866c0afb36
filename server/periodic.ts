/**
 * Runs `run` every `intervalMs`, never two at once (a tick while one is running is skipped),
 * without keeping the process alive. A run that throws is reported to `onError` and the
 * timer goes on. `stop()` ends the timer and waits for a run in progress; `stopped` tells a
 * long run to finish early.
 */
export interface Periodic {
  readonly stopped: boolean;
  stop(): Promise<void>;
}

export function startPeriodic(
  run: () => Promise<unknown>,
  intervalMs: number,
  onError: (err: unknown) => void,
): Periodic {
  let stopped = false;
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (stopped || running) return;
    running = run()
      .catch(onError)
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    get stopped() {
      return stopped;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
