import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { TeamHub } from "../inbox/team-hub.js";
import type { Logger } from "../logger.js";
import { startPeriodic } from "../periodic.js";
import { releaseTasksOfAbsentOwner } from "../protocols/owner-timeout.js";
import { wakeAftermath } from "../protocols/task-ownership.js";
import type { Database } from "../store/database.js";
import {
  announcePresenceChanges,
  findAbsentOwners,
  markSeen,
  type PresenceChange,
  type PresenceWindows,
} from "../store/presence.js";

export interface PresenceOptions extends PresenceWindows {
  /**
   * An owner offline this many seconds (past offlineS since last seen) has its claimed tasks
   * given back to unowned, the lead told. 0: never.
   */
  taskOwnerTimeoutS: number;
  /** How often the job runs. */
  intervalMs: number;
}

/** The defaults of PRESENCE_ONLINE_S, PRESENCE_OFFLINE_S and TASK_OWNER_TIMEOUT_S. */
export const DEFAULT_PRESENCE: PresenceOptions = {
  onlineS: 60,
  offlineS: 900,
  taskOwnerTimeoutS: 0,
  intervalMs: presenceIntervalMs(60),
};

/**
 * How often presence is recomputed for an online window: often enough that an open stream is
 * re-marked seen several times within the window, and a transition is announced soon after
 * it happens (at most 5 s late).
 */
export function presenceIntervalMs(onlineS: number): number {
  return Math.max(100, Math.min(5_000, (onlineS * 1000) / 4));
}

export interface PresenceJob {
  /** One round now: open streams marked seen, transitions announced, absent owners released. */
  runOnce(): Promise<{ changes: PresenceChange[]; released: string[] }>;
  stop(): Promise<void>;
}

/**
 * Presence on a timer (docs/presence.md). Each round: the members holding an inbox stream
 * open in this process are marked seen ("stream"); every
 * member whose presence changed gets one 'presence' member event (store/presence.ts), and
 * its team's watchers are woken; with a task-owner timeout, each absent owner's claimed
 * tasks go back to unowned in a transaction of its own (protocols/owner-timeout.ts). Several
 * server processes may run it against one database: a transition is announced once, and a
 * task released once (its row lock and a compare on its owner).
 */
export function startPresenceJob(options: {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  teams: TeamHub;
  logger: Logger;
  presence: PresenceOptions;
}): PresenceJob {
  const { db, hub, teams, logger, presence } = options;

  const runOnce = async () => {
    // One statement per round for every stream this process holds: a held stream is a
    // member that can be reached now, whether or not it calls.
    await markSeen(db, new Map(hub.memberIds().map((id) => [id, "stream" as const])));
    const changes = await announcePresenceChanges(db, presence);
    if (changes.length > 0) teams.wake(new Set(changes.map((c) => c.teamId)));
    const released: string[] = [];
    if (presence.taskOwnerTimeoutS > 0) {
      const absentS = presence.offlineS + presence.taskOwnerTimeoutS;
      for (const owner of await findAbsentOwners(db, absentS)) {
        if (periodic.stopped) break;
        const { taskIds, aftermath } = await db.transaction((tx) =>
          releaseTasksOfAbsentOwner(tx, {
            teamId: owner.teamId,
            member: owner,
            absentS,
          }),
        );
        wakeAftermath(options, aftermath);
        if (taskIds.length > 0) {
          teams.wake([owner.teamId]);
          released.push(...taskIds);
          logger.info(
            { event: "tasks_released_absent_owner", member: owner.name, tasks: taskIds },
            "an absent owner's tasks are unowned again",
          );
        }
      }
    }
    return { changes, released };
  };

  const periodic = startPeriodic(runOnce, presence.intervalMs, (err) =>
    logger.error({ event: "presence_failed", err }, "presence round failed"),
  );
  return { runOnce, stop: () => periodic.stop() };
}
