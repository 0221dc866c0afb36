import { collectDefaultMetrics, Registry } from "prom-client";

let shared: Registry | undefined;

/**
 * prom-client's default metrics (process_*, nodejs_*: CPU, memory, file descriptors, heap,
 * GC, the event-loop delay from perf_hooks.monitorEventLoopDelay) in a registry of their
 * own, made once per process: they describe the process, not an app, and prom-client has
 * no way to stop them (a GC PerformanceObserver and an event-loop delay monitor each), so
 * one set per app was a leak in a process that starts many apps (the tests). The event-loop
 * delay's statistics are reset at each scrape, so with several apps in one process each
 * scrape reads the delay since any app's last one.
 */
export function processMetrics(): Registry {
  if (!shared) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
