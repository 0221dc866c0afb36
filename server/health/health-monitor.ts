import { HealthCheckResponse_ServingStatus as ServingStatus } from "@team-protocols/contract/health/v1/health_pb.js";
import type { Logger } from "../logger.js";
import type { Database } from "../store/database.js";
import { startDatabaseProbe } from "./database-probe.js";

export { ServingStatus };

export interface HealthMonitorOptions {
  db: Pick<Database, "ping">;
  logger: Logger;
  /**
   * The services health is reported for, besides "" (the whole server). All of them
   * depend on the database alone, so they are all SERVING or all NOT_SERVING.
   */
  services: string[];
  /** Time between background database pings. Default 2 s. */
  pingIntervalMs?: number;
  /** A ping slower than this counts as a failure. Default 1 s. */
  pingTimeoutMs?: number;
}

export interface HealthMonitor {
  /** A service's status now; undefined for a service health is not reported for. */
  status(service: string): ServingStatus | undefined;
  /** Every reported service ("" included) with its status now. */
  statuses(): Map<string, ServingStatus>;
  /** Pings the database first, so the answer is current (a Check, for example). */
  refresh(): Promise<void>;
  /**
   * Resolves once something changed after `version` (see `version`), when the monitor
   * stops, or when `signal` aborts. Watchers read, remember `version`, and wait here, so
   * no change falls between a read and the wait.
   */
  changed(version: number, signal: AbortSignal): Promise<void>;
  /** Bumped by every change of status. */
  readonly version: number;
  /** True once shutdown() was called: Watch streams deliver the last status and end. */
  readonly stopping: boolean;
  /** NOT_SERVING for good: the server is stopping (call it before draining calls). */
  shutdown(): void;
}

/**
 * The server's health as grpc.health.v1 reports it: SERVING while the database answers
 * its pings, NOT_SERVING while it does not and from the start of a graceful stop on, so a
 * load balancer stops sending new calls before the server goes away.
 */
export function createHealthMonitor(options: HealthMonitorOptions): HealthMonitor {
  const { logger } = options;
  const services = new Set(["", ...options.services]);
  let version = 0;
  let stopping = false;
  const waiters = new Set<() => void>();
  const bump = () => {
    version++;
    for (const wake of [...waiters]) wake();
  };

  const probe = startDatabaseProbe({
    db: options.db,
    intervalMs: options.pingIntervalMs ?? 2_000,
    timeoutMs: options.pingTimeoutMs ?? 1_000,
    onChange(reachable, err) {
      if (reachable) logger.info({ event: "db_reachable" }, "database answers again: SERVING");
      else logger.warn({ event: "db_unreachable", err }, "database unreachable: NOT_SERVING");
      bump();
    },
  });

  const current = () =>
    !stopping && probe.reachable ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;

  return {
    status: (service) => (services.has(service) ? current() : undefined),
    statuses: () => new Map([...services].map((s) => [s, current()])),
    async refresh() {
      if (!stopping) await probe.probe();
    },
    changed(since, signal) {
      if (version !== since || stopping || signal.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const wake = () => {
          waiters.delete(wake);
          signal.removeEventListener("abort", wake);
          resolve();
        };
        waiters.add(wake);
        signal.addEventListener("abort", wake);
      });
    },
    get version() {
      return version;
    },
    get stopping() {
      return stopping;
    },
    shutdown() {
      if (stopping) return;
      stopping = true;
      probe.stop();
      bump();
    },
  };
}
