import type { TeamHub } from "../inbox/team-hub.js";
import type { Logger } from "../logger.js";
import type { Database } from "../store/database.js";
import { indexPendingSearch } from "../store/search-index.js";

export interface SearchIndexer {
  /** Something was stored: index it soon (coalesced; a run in progress runs once more). */
  poke(): void;
  /** Resolves once the queue was found empty after every poke so far (tests, the bench). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/** Queue rows per transaction: big enough to amortise a commit, small enough to be brief. */
const BATCH = 256;
const DELAY_MS = 5;

/**
 * Keeps message_search up to date behind the sends (migration 013): each poke, it drains
 * search_pending a batch per transaction until the queue is empty. Pokes come with the
 * wake-ups of the team feed (every stored message wakes its team's WatchTeam streams, here
 * or, through the cluster bus, in another server process), so a message is searchable a
 * few milliseconds after its commit; under load pokes arrive while a run is in progress
 * and the batches grow instead. A timer pokes every `intervalMs` too, for what arrived
 * without a wake-up (another process that stopped before indexing it, migration 013's
 * backfill). Several processes may run it against one database: a queue row is taken by
 * one (SKIP LOCKED).
 */
export function startSearchIndexer(options: {
  db: Database;
  logger: Logger;
  intervalMs?: number;
}): SearchIndexer {
  const { db, logger } = options;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let failures = 0;

  const drain = async () => {
    do {
      again = false;
      try {
        while (!stopped && (await indexPendingSearch(db, { batch: BATCH })) === BATCH) {}
        failures = 0;
      } catch (err) {
        // The rows stay queued; the next poke or tick tries again. Logged once per streak.
        if (failures++ === 0) logger.warn({ event: "search_index_failed", err }, "search index");
        return;
      }
    } while (again && !stopped);
  };
  // A poke starts a run DELAY_MS later, not at once: the sends of those milliseconds are
  // indexed by one transaction instead of one each.
  const poke = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = new Promise<void>((ok) => setTimeout(ok, DELAY_MS)).then(drain).finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(poke, options.intervalMs ?? 5_000);
  timer.unref();
  poke();
  return {
    poke,
    async idle() {
      while (running) await running;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/** `teams`, also calling `onWake` at each wake-up (the indexer's poke). */
export function withWakeHook(teams: TeamHub, onWake: () => void): TeamHub {
  return Object.assign(Object.create(teams) as TeamHub, {
    wake(teamIds: Iterable<number>) {
      teams.wake(teamIds);
      onWake();
    },
    wakeAll() {
      teams.wakeAll();
      onWake();
    },
  });
}
