/**
 * How big each scenario is. `full` is the documented run; `smoke` exercises every code path
 * with tiny counts (the whole run well under a minute) so CI keeps the bench working.
 * Every scenario has a count bound here and a time budget (budgetMs) it cannot exceed.
 */
import type { H2loadShape } from "./scenarios/h2load.js";
import type { StalledProfile } from "./scenarios/stalled.js";

export interface Profile {
  name: "full" | "smoke";
  /** Concurrent senders (throughput) and connections (baseline loops), the same set. */
  concurrency: number[];
  latency: {
    ratesPerSec: number[];
    /** Sent at the rate but not recorded: JIT, pools and caches warm up here. */
    warmupSec: number;
    measureSec: number;
    /** Messages go round-robin to this many live subscribers. */
    receivers: number;
    sendConnections: number;
    /** How long after the last send a late delivery is still waited for. */
    drainMs: number;
    /** Sends awaiting their response; beyond it the rate is unsustainable and the run stops. */
    maxInFlight: number;
    budgetMs: number;
  };
  throughput: {
    warmupSec: number;
    measureSec: number;
    /** Inboxes the spread pattern writes to (also the most senders there can be). */
    inboxes: number;
    maxConnections: number;
    budgetMs: number;
  };
  fanout: {
    subscribers: number;
    connections: number;
    rounds: number;
    roundTimeoutMs: number;
    budgetMs: number;
  };
  protocol: { rounds: number; roundTimeoutMs: number; budgetMs: number };
  memory: {
    /** Open idle streams at each measurement. */
    levels: number[];
    /** Streams opened (and kept) before the first reading, so warm-up is not counted. */
    warmupStreams: number;
    /**
     * Streams opened and closed again before the first reading (other members): the
     * allocation burst of opening many streams makes V8 commit its young generation and
     * warm its code, ~27 MB that would otherwise be counted against the first level.
     */
    rehearsalStreams: number;
    connections: number;
    /** Streams opened at a time (a burst would inflate RSS with transient buffers). */
    openChunk: number;
    settleMs: number;
    budgetMs: number;
  };
  /** Stalled Subscribe streams of one member over a large backlog (issue #15 item 1). */
  stalled: StalledProfile;
  /** The unary call driven by h2load, against the same-run floors (issue #12). */
  h2load: {
    shapes: H2loadShape[];
    /** Each run is preceded by an unmeasured one this long (JIT, pools, caches); 0: none. */
    warmupSec: number;
    measureSec: number;
    budgetMs: number;
  };
  /** Send -> delivered with h2load's rate mode as the sender (issue #12). */
  h2loadLatency: {
    ratePerSec: number;
    /** One h2load process (one connection) per receiver, each at ratePerSec / receivers. */
    receivers: number;
    /** Streams one h2load connection may have in flight before it falls behind its rate. */
    maxStreamsPerReceiver: number;
    warmupSec: number;
    measureSec: number;
    drainMs: number;
    budgetMs: number;
  };
  baseline: {
    warmupSec: number;
    measureSec: number;
    /** Rows of the one-commit batch that fan-out is compared with. */
    batchRows: number;
    batchRepeats: number;
    budgetMs: number;
  };
}

/** Issue #12's shapes: 1 connection; 64 connections x 1 stream; 4 connections x 32 streams. */
const H2LOAD_SHAPES: H2loadShape[] = [
  { connections: 1, streams: 1 },
  { connections: 64, streams: 1 },
  { connections: 4, streams: 32 },
];

export const FULL: Profile = {
  name: "full",
  concurrency: [1, 8, 64],
  latency: {
    ratesPerSec: [100, 1_000, 5_000],
    warmupSec: 2,
    measureSec: 10,
    receivers: 16,
    sendConnections: 4,
    drainMs: 20_000,
    maxInFlight: 2_000,
    budgetMs: 180_000,
  },
  throughput: { warmupSec: 1, measureSec: 5, inboxes: 64, maxConnections: 8, budgetMs: 120_000 },
  fanout: {
    subscribers: 1_000,
    connections: 8,
    rounds: 7,
    roundTimeoutMs: 10_000,
    budgetMs: 180_000,
  },
  protocol: { rounds: 100, roundTimeoutMs: 5_000, budgetMs: 120_000 },
  memory: {
    levels: [1_000, 10_000],
    warmupStreams: 100,
    rehearsalStreams: 1_000,
    // 11,100 streams over 50 connections: 222 each, under the server's default cap of
    // 256 concurrent streams per HTTP/2 connection (a client queues streams past it).
    connections: 50,
    openChunk: 500,
    settleMs: 3_000,
    budgetMs: 420_000,
  },
  // As found in issue #15: 2,000 streams over two connections, a 2.4 MB backlog (300 x 8 KiB).
  stalled: {
    streams: 2_000,
    connections: 2,
    backlogMessages: 300,
    messageBytes: 8 * 1024,
    settleMs: 3_000,
    budgetMs: 300_000,
  },
  baseline: { warmupSec: 1, measureSec: 5, batchRows: 1_000, batchRepeats: 7, budgetMs: 120_000 },
  // 6 targets x 3 shapes x 7 s, plus the floors' start.
  h2load: {
    shapes: H2LOAD_SHAPES,
    warmupSec: 2,
    measureSec: 5,
    budgetMs: 300_000,
  },
  h2loadLatency: {
    ratePerSec: 1_000,
    receivers: 16,
    maxStreamsPerReceiver: 64,
    warmupSec: 2,
    measureSec: 10,
    drainMs: 20_000,
    budgetMs: 120_000,
  },
};

export const SMOKE: Profile = {
  name: "smoke",
  concurrency: [1, 8, 64],
  latency: {
    // 1,000/s is kept so the smoke report has every targeted figure (the full run's shape).
    ratesPerSec: [100, 1_000],
    warmupSec: 0.2,
    measureSec: 0.3,
    receivers: 4,
    sendConnections: 2,
    drainMs: 5_000,
    maxInFlight: 500,
    budgetMs: 20_000,
  },
  throughput: {
    warmupSec: 0.1,
    measureSec: 0.3,
    inboxes: 64,
    maxConnections: 4,
    budgetMs: 20_000,
  },
  fanout: { subscribers: 50, connections: 2, rounds: 2, roundTimeoutMs: 5_000, budgetMs: 20_000 },
  protocol: { rounds: 5, roundTimeoutMs: 5_000, budgetMs: 15_000 },
  memory: {
    levels: [50, 200],
    warmupStreams: 10,
    rehearsalStreams: 20,
    connections: 4,
    openChunk: 100,
    settleMs: 200,
    budgetMs: 30_000,
  },
  stalled: {
    streams: 40,
    connections: 2,
    backlogMessages: 40,
    messageBytes: 8 * 1024,
    settleMs: 200,
    budgetMs: 60_000,
  },
  baseline: {
    warmupSec: 0.1,
    measureSec: 0.3,
    batchRows: 1_000,
    batchRepeats: 2,
    budgetMs: 15_000,
  },
  // Every code path at small shapes (a 64-connection run is 64 h2load processes), no warm-up.
  h2load: {
    shapes: [
      { connections: 1, streams: 1 },
      { connections: 4, streams: 1 },
      { connections: 2, streams: 4 },
    ],
    warmupSec: 0,
    measureSec: 0.3,
    budgetMs: 60_000,
  },
  h2loadLatency: {
    ratePerSec: 1_000,
    receivers: 4,
    maxStreamsPerReceiver: 64,
    warmupSec: 0.2,
    measureSec: 0.3,
    drainMs: 5_000,
    budgetMs: 20_000,
  },
};
