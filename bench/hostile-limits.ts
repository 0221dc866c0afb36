/** The connection and stream limit scenarios of bench/hostile.ts, by name. */
import type { HostileRun } from "./hostile-common.js";
import { idleConnections } from "./hostile-idle-connections.js";
import { unfinishedBodies } from "./hostile-unfinished-bodies.js";
import { watchObservers } from "./hostile-watch-observers.js";

export const limitScenarios: Record<string, (run: HostileRun) => Promise<string[]>> = {
  "idle-connections": idleConnections,
  "unfinished-bodies": unfinishedBodies,
  "watch-observers": watchObservers,
};
