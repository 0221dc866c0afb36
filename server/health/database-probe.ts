import type { Database } from "../store/database.js";
import { startLoopFreeDeadline } from "./loop-free-deadline.js";

export interface DatabaseProbeOptions {
  db: Pick<Database, "ping">;
  /** Time between background pings. */
  intervalMs: number;
  /**
   * A ping that has not answered after this long counts as a failure; time in which our own
   * event loop was blocked is not counted (loop-free-deadline.ts).
   */
  timeoutMs: number;
  /** Called when reachability flips (not on every ping); `error` is the failed ping's. */
  onChange(reachable: boolean, error?: unknown): void;
}

export interface DatabaseProbe {
  /** What the last ping found. True until one fails: the server starts on a migrated database. */
  readonly reachable: boolean;
  /** Pings now (or joins the ping in flight) and says whether the database answered in time. */
  probe(): Promise<boolean>;
  /** Stops the background pings. */
  stop(): void;
}

/**
 * Pings the database every `intervalMs` and on demand. At most one ping runs at a time,
 * even after one timed out: against a hung server, pings that never end would otherwise
 * pile up and take every connection of the pool. A ping hung on a silent connection ends at
 * the driver's client-side timeout (pg-database.ts: query_timeout, connectionTimeoutMillis),
 * and the next ping runs then (test/service/health-loop-stall.test.ts, black-holed).
 */
export function startDatabaseProbe(options: DatabaseProbeOptions): DatabaseProbe {
  const { db, intervalMs, timeoutMs, onChange } = options;
  let reachable = true;
  let inFlight: Promise<unknown> | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const record = (ok: boolean, error?: unknown) => {
    if (ok === reachable || stopped) return;
    reachable = ok;
    onChange(ok, error);
  };

  const probe = async (): Promise<boolean> => {
    if (!inFlight) {
      const ping = db.ping().then(
        () => record(true),
        (err: unknown) => record(false, err),
      );
      inFlight = ping.finally(() => {
        inFlight = undefined;
      });
    }
    const deadline = startLoopFreeDeadline(timeoutMs);
    const answered = await Promise.race([
      inFlight.then(() => true),
      deadline.expired.then(() => false),
    ]);
    deadline.cancel();
    if (!answered) record(false, new Error(`database did not answer a ping in ${timeoutMs} ms`));
    return reachable;
  };

  const tick = () => {
    void probe().finally(() => {
      if (!stopped) {
        timer = setTimeout(tick, intervalMs);
        // A probe must not keep a process alive that is otherwise done.
        timer.unref();
      }
    });
  };
  timer = setTimeout(tick, intervalMs);
  timer.unref();

  return {
    get reachable() {
      return reachable;
    },
    probe,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
