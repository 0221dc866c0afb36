import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { processMetrics } from "./process-metrics.js";

/**
 * The server's Prometheus instruments (prom-client), one registry per app so that several
 * apps in one process (tests) do not count into each other; `registry` shows them with the
 * process's own metrics, which all apps of a process share (process-metrics.ts).
 *
 * Cross-cutting like the logger: every room may record into it, so it imports nothing of
 * the server. What it reads on a scrape (subscriptions, the database's backlog and pool)
 * comes through `MetricSources`, wired by app.ts.
 *
 * Every label takes values from a set fixed by the code (method names, code names, rule
 * ids, HTTP versions), never from a client's input: no team, member or token reaches a label,
 * so no client can grow the number of series.
 */
export interface Metrics {
  readonly registry: Registry;
  /** A TeamService call ended: `code` is "ok" or a Connect code's wire name. */
  callEnded(method: string, code: string): void;
  /** A call was refused by a rule of the table (`kind` "rule") or by a limit ("limit"). */
  refused(rule: string, kind: "rule" | "limit"): void;
  /** A Send answered successfully after this many seconds. */
  sendSeconds(seconds: number): void;
  /** A live message reached its subscriber's stream; `sentAt` is when it was stored. */
  delivered(sentAt: Date): void;
  /** A subscription read one page of its inbox from the database. */
  pageRead(): void;
  /** A subscription's write was not accepted at once (its client is not reading): +1 / -1. */
  streamBlocked(delta: 1 | -1): void;
  /** Message bytes subscriptions have read and not yet written out: + at a read, - after. */
  pageBytesHeld(delta: number): void;
  /** Feed bytes WatchTeam streams have read and not yet written out: + at a read, - after. */
  watchPageBytesHeld(delta: number): void;
  /** A WatchTeam stream got a page: read from the database for it, or shared with another's. */
  watchPage(source: "database" | "shared"): void;
  /** A connection was routed to HTTP/1.1 or HTTP/2; call the result when it closes. */
  connectionOpened(httpVersion: "1.1" | "2"): () => void;
  /** An HTTP/2 stream opened; streamClosed when it closes (once per stream). */
  streamOpened(): void;
  /** A function of its own (not a method needing `this`): given as each stream's listener. */
  readonly streamClosed: () => void;
  /** Where the gauges read on a scrape come from (set once, by app.ts). */
  setSources(sources: MetricSources): void;
}

export interface MetricSources {
  /** Open subscriptions in this process. */
  subscriptions(): number;
  /** Unacked messages over all inboxes, and in the fullest one (one aggregate query). */
  backlog(): Promise<{ total: number; max: number }>;
  /** Protocol requests by status (one aggregate query). */
  requests(): Promise<Record<string, number>>;
  /** The database's connections: in the pool, idle, and callers waiting for one. */
  pool(): { total: number; idle: number; waiting: number };
  /** A scrape's database query failed (logged; the gauges it feeds are left out). */
  onScrapeError(err: unknown): void;
}

// Seconds: from a fraction of a millisecond (a send into the group commit on an idle
// server) to the 30 s after which a stalled subscriber is cut.
const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  let sources: MetricSources | undefined;

  const calls = new Counter({
    name: "team_rpc_calls_total",
    help: "TeamService calls that ended, by method and status code (ok, or the Connect code)",
    labelNames: ["method", "code"] as const,
    registers,
  });
  const refusals = new Counter({
    name: "team_refusals_total",
    help: "Calls refused by a protocol rule (kind=rule) or a server limit (kind=limit), by rule id",
    labelNames: ["rule", "kind"] as const,
    registers,
  });
  const sendLatency = new Histogram({
    name: "team_send_duration_seconds",
    help: "Time from a Send reaching the service to its answer (committed), successful sends",
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const deliveryLatency = new Histogram({
    name: "team_delivery_latency_seconds",
    help:
      "Time from a message being stored (its sent_at, the database's clock) to its being " +
      "written to a live subscriber's stream; backlog read at subscribe is not counted",
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const pages = new Counter({
    name: "team_subscribe_pages_read_total",
    help: "Pages of an inbox read from the database by subscriptions",
    registers,
  });
  const watchPages = new Counter({
    name: "team_watch_pages_total",
    help:
      "Team feed pages WatchTeam streams got, by source: read from the database for the " +
      "stream (database), or joined to a read of the same page another stream of the team " +
      "was about to make (shared)",
    labelNames: ["source"] as const,
    registers,
  });
  // Plain numbers, moved on every message: the gauges read them at a scrape.
  let blockedStreams = 0;
  let heldBytes = 0;
  let watchHeldBytes = 0;
  new Gauge({
    name: "team_subscribe_streams_blocked",
    help: "Subscriptions whose last write waits for the client to read (HTTP/2 window full)",
    registers,
    collect() {
      this.set(blockedStreams);
    },
  });
  new Gauge({
    name: "team_subscribe_page_bytes_held",
    help:
      "Message bytes subscriptions read from the database and have not written out yet " +
      "(a stream whose client stopped reading lets go of its page)",
    registers,
    collect() {
      this.set(heldBytes);
    },
  });
  new Gauge({
    name: "team_watch_page_bytes_held",
    help:
      "Body bytes of team feed events WatchTeam streams read from the database and have not " +
      "written out yet (a stream whose client stopped reading lets go of its page)",
    registers,
    collect() {
      this.set(watchHeldBytes);
    },
  });
  const connections = new Gauge({
    name: "team_http_connections",
    help: "Open client connections, by HTTP version",
    labelNames: ["http_version"] as const,
    registers,
  });
  const streams = new Gauge({
    name: "team_http2_streams",
    help: "Open HTTP/2 streams (calls in progress on HTTP/2 connections)",
    registers,
  });
  for (const version of ["1.1", "2"]) connections.set({ http_version: version }, 0);

  new Gauge({
    name: "team_subscriptions",
    help: "Open Subscribe streams in this process",
    registers,
    collect() {
      this.set(sources?.subscriptions() ?? 0);
    },
  });
  // The database's figures come from two aggregate queries per scrape, shared by the gauges
  // below: prom-client collects every metric of a scrape at once, so each awaits the same
  // promise (a new one once it settled).
  let figures: Promise<DatabaseFigures | undefined> | undefined;
  const databaseFigures = () => {
    if (!figures) {
      const s = sources;
      figures = (async () => {
        if (!s) return undefined;
        try {
          const [backlog, requests] = await Promise.all([s.backlog(), s.requests()]);
          return { backlog, requests };
        } catch (err) {
          s.onScrapeError(err);
          return undefined;
        }
      })();
      void figures.finally(() => {
        figures = undefined;
      });
    }
    return figures;
  };
  new Gauge({
    name: "team_inbox_backlog_messages",
    help: "Unacked messages over all inboxes (read from the database at each scrape)",
    registers,
    async collect() {
      const f = await databaseFigures();
      this.reset();
      if (f) this.set(f.backlog.total);
    },
  });
  new Gauge({
    name: "team_inbox_backlog_max_messages",
    help: "Unacked messages in the fullest inbox (read from the database at each scrape)",
    registers,
    async collect() {
      const f = await databaseFigures();
      this.reset();
      if (f) this.set(f.backlog.max);
    },
  });
  new Gauge({
    name: "team_protocol_requests",
    help: "Protocol requests (shutdown, plan approval) by status, within retention",
    labelNames: ["status"] as const,
    registers,
    async collect() {
      const f = await databaseFigures();
      this.reset();
      for (const [status, n] of Object.entries(f?.requests ?? {})) this.set({ status }, n);
    },
  });
  new Gauge({
    name: "team_metrics_database_up",
    help: "1 when this scrape's database queries (backlog, requests) answered, else 0",
    registers,
    async collect() {
      this.set((await databaseFigures()) ? 1 : 0);
    },
  });
  const pool = new Gauge({
    name: "team_db_pool_connections",
    help: "Database connections: state=total (in the pool), idle, waiting (callers queued for one)",
    labelNames: ["state"] as const,
    registers,
    collect() {
      const p = sources?.pool() ?? { total: 0, idle: 0, waiting: 0 };
      pool.set({ state: "total" }, p.total);
      pool.set({ state: "idle" }, p.idle);
      pool.set({ state: "waiting" }, p.waiting);
    },
  });

  const callsByLabels = new Map<string, { inc(): void }>();
  return {
    // All instruments exist by now: the merged registry holds them and the process's.
    registry:
      options.defaultMetrics === false ? registry : Registry.merge([registry, processMetrics()]),
    callEnded(method, code) {
      // The child of each (method, code) pair, found once: inc({ ... }) hashes its labels
      // on every call. The pairs are few (methods × codes), so the map stays small.
      const key = `${method} ${code}`;
      let child = callsByLabels.get(key);
      if (child === undefined) {
        child = calls.labels({ method, code });
        callsByLabels.set(key, child);
      }
      child.inc();
    },
    refused: (rule, kind) => refusals.inc({ rule, kind }),
    sendSeconds: (seconds) => sendLatency.observe(seconds),
    delivered: (sentAt) =>
      deliveryLatency.observe(Math.max(0, Date.now() - sentAt.getTime()) / 1000),
    pageRead: () => pages.inc(),
    streamBlocked: (delta) => {
      blockedStreams += delta;
    },
    pageBytesHeld: (delta) => {
      heldBytes += delta;
    },
    watchPageBytesHeld: (delta) => {
      watchHeldBytes += delta;
    },
    watchPage: (source) => watchPages.inc({ source }),
    connectionOpened(httpVersion) {
      connections.inc({ http_version: httpVersion });
      return once(() => connections.dec({ http_version: httpVersion }));
    },
    streamOpened() {
      streams.inc();
    },
    // Shared by every stream ('close' is emitted once): not a closure per stream, which an
    // idle one would keep for hours.
    streamClosed: () => {
      streams.dec();
    },
    setSources(s) {
      sources = s;
    },
  };
}

interface DatabaseFigures {
  backlog: { total: number; max: number };
  requests: Record<string, number>;
}

const once = (fn: () => void) => {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
};
