import type { LoopDelay } from "../loop-delay.js";
import type { Profile } from "../profile.js";

/** What every scenario against the server is given. */
export interface ScenarioContext {
  /** The server under test. */
  url: string;
  /** Prefix of every team this run creates (team names are unique per run). */
  runId: string;
  profile: Profile;
  /** Progress lines, to stderr (stdout carries the table). */
  log(line: string): void;
  /** The server process's CPU time so far (ms), to tell where a run's time went. */
  serverCpuMs(): Promise<number | undefined>;
  /** The server's event-loop delay since the previous call (which it resets). */
  serverLoopDelay(): Promise<LoopDelay>;
  /** Aborts when the scenario's time budget is spent. */
  signal: AbortSignal;
}
