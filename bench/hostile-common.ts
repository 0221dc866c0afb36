/**
 * What the limit scenarios of bench/hostile.ts share (each scenario is a file of its own,
 * registered there): how a scenario gets its server, and small figures helpers.
 */
import { Connections } from "./connections.js";
import type { BenchServer } from "./server-process.js";
import { createBenchTeam } from "./teams.js";

/** What bench/hostile.ts hands a scenario: a fresh server with `env` set. */
export interface HostileRun {
  start(env: Record<string, string>): Promise<BenchServer>;
}

export const MiB = 1024 * 1024;
export const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
export const log = (line: string) => process.stderr.write(`${line}\n`);

/** The p-th percentile (0..1) of `values` (sorted here). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
}

/** A team with `teammates` teammates on `server` (its setup connection closed). */
export async function hostileTeam(server: BenchServer, teammates = 1) {
  const connections = new Connections(server.url, 1);
  await connections.open();
  try {
    return await createBenchTeam(
      connections,
      `hostile${Date.now()}`,
      "t",
      teammates,
      new AbortController().signal,
    );
  } finally {
    connections.close();
  }
}
