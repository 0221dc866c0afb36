import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { TeamHub } from "../inbox/team-hub.js";
import type { Logger } from "../logger.js";
import { startPeriodic } from "../periodic.js";
import type { Database } from "../store/database.js";
import { claimOverdueRequest, finishRequest } from "../store/requests.js";
import { expireLeases } from "./leases.js";
import { deliverRequestUpdate } from "./request-updates.js";

export interface ExpirySweeperOptions {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  /** WatchTeam streams: an expiry is a request change in its team's feed. */
  teams: TeamHub;
  logger: Logger;
  /** How often overdue requests are looked for. */
  intervalMs: number;
}

export interface ExpirySweeper {
  /** Expires every overdue request now; returns how many it expired. */
  sweep(): Promise<number>;
  /** Stops the timer and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/** At most this many requests expire per tick, so one tick stays short. */
const MAX_PER_TICK = 500;

/**
 * Moves pending requests past their deadline to expired and tells each requester with a
 * request_update; then deletes lapsed leases and tells their holders (protocols/leases.ts). One transaction per request: the overdue row is claimed with FOR UPDATE
 * SKIP LOCKED and moved by compare-and-set, so several server processes can sweep the same
 * database, and a response racing the expiry either wins (the sweeper then skips it) or
 * loses (and is refused by once-only).
 *
 * Across a database failover: the only lock is that row lock, held by the transaction that
 * expires the request and writes its request_update, and released with it. A failover
 * cuts the transaction; whether it committed is then unknown, but either the new primary
 * has the expiry and its update together (a synchronous standby had the commit), or
 * neither, and the request is still pending and overdue there: the next sweep expires it.
 * Nothing is held or remembered between sweeps, so the requester gets exactly one
 * request_update either way; only its wake-up may come from the next sweep.
 */
export function startExpirySweeper(options: ExpirySweeperOptions): ExpirySweeper {
  const { db, hub, waiters, teams, logger } = options;

  const expireOne = () =>
    db.transaction(async (tx) => {
      const request = await claimOverdueRequest(tx);
      if (!request) return undefined;
      await finishRequest(tx, request.id, "expired", null);
      const delivery = await deliverRequestUpdate(
        tx,
        request,
        "expired",
        "requester",
        `request ${request.id} to "${request.toName}" expired without an answer`,
      );
      return { request, delivery };
    });

  const sweep = async (): Promise<number> => {
    let count = 0;
    while (count < MAX_PER_TICK && !periodic.stopped) {
      const expired = await expireOne();
      if (!expired) break;
      count++;
      if (expired.delivery) hub.wake([expired.delivery.memberId]);
      teams.wake([expired.request.teamId]);
      waiters.notify(expired.request.id);
    }
    // Lapsed leases: deleted, and their holders told, in one transaction per tick.
    if (!periodic.stopped) {
      const told = await db.transaction((tx) => expireLeases(tx, MAX_PER_TICK));
      // Stryker disable next-line ConditionalExpression,EqualityOperator: a wake of no member ids wakes nobody; the test only spares the call
      if (told.length > 0) hub.wake(told.map((d) => d.memberId));
    }
    return count;
  };

  const periodic = startPeriodic(sweep, options.intervalMs, (err) =>
    logger.error({ event: "sweep_failed", err }, "request expiry sweep failed"),
  );
  return { sweep, stop: () => periodic.stop() };
}
