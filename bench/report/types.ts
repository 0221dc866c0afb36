import type { PgSettings } from "../baseline-db.js";
import type { Machine } from "../machine.js";
import type { BaselineResult } from "../scenarios/baseline.js";
import type { FanoutResult } from "../scenarios/fanout.js";
import type { H2loadResult } from "../scenarios/h2load.js";
import type { H2loadLatencyResult } from "../scenarios/h2load-latency.js";
import type { LatencyResult } from "../scenarios/latency.js";
import type { MemoryResult } from "../scenarios/memory.js";
import type { ProtocolResult } from "../scenarios/protocol.js";
import type { StalledResult } from "../scenarios/stalled.js";
import type { ThroughputResult } from "../scenarios/throughput.js";

/** How one scenario ended. A failed scenario does not stop the others. */
export type Outcome<T> =
  | { status: "ok"; elapsedMs: number; result: T }
  | { status: "error"; elapsedMs: number; error: string }
  | { status: "skipped" };

export interface Scenarios {
  baseline: Outcome<BaselineResult>;
  latency: Outcome<LatencyResult>;
  throughput: Outcome<ThroughputResult>;
  fanout: Outcome<FanoutResult>;
  protocol: Outcome<ProtocolResult>;
  memory: Outcome<MemoryResult>;
  stalled: Outcome<StalledResult>;
  h2load: Outcome<H2loadResult>;
  "h2load-latency": Outcome<H2loadLatencyResult>;
}

export const SCENARIO_NAMES = [
  "baseline",
  "latency",
  "throughput",
  "fanout",
  "protocol",
  "memory",
  "stalled",
  "h2load",
  "h2load-latency",
] as const satisfies readonly (keyof Scenarios)[];

export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/** A baseline figure a measured one is compared with, and the ratio measured / limit. */
export interface Limit {
  what: string;
  value: number;
  ratio: number;
}

/** One line of the table. */
export interface Figure {
  scenario: ScenarioName;
  figure: string;
  value: number | null;
  unit: "ms" | "sends/s" | "calls/s" | "commits/s" | "KB/stream" | "MiB" | "streams";
  target?: { op: "<=" | ">="; value: number };
  /** Whether the target is met; absent when the figure has no target. */
  met?: boolean;
  limits?: Limit[];
  note?: string;
}

/** What bench/results/latest.json holds. */
export interface BenchReport {
  schema: "team-protocols-bench/1";
  profile: "full" | "smoke";
  startedAt: string;
  elapsedMs: number;
  machine: Machine;
  /** 1-minute load average when the run ended (the machine's at start is in `machine`). */
  loadAverage1mAtEnd: number;
  database: {
    kind: "postgres" | "embedded";
    source: string;
    baselineWhere: string | null;
    settings: PgSettings | null;
  };
  /** The server's effective configuration (its defaults unless the bench says otherwise). */
  server: { dbPoolSize: number; heartbeatIntervalMs: number; transport: string };
  /** The targets are stated for this setting; figures elsewhere are reported against them too. */
  targetsApplyTo: string;
  scenarios: Scenarios;
  figures: Figure[];
}
