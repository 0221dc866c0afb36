import type { Logger } from "../logger.js";
import { startPeriodic } from "../periodic.js";
import type { Database } from "../store/database.js";
import {
  deleteAckedMessages,
  deleteFinishedRequests,
  deleteOldAttempts,
  deleteOldMemberEvents,
  deleteOldSends,
  deleteOldTaskEvents,
} from "../store/retention.js";

const DAY_MS = 86_400_000;
/** Rows per statement: each batch is one short transaction. */
const BATCH = 5_000;

export interface RetentionOptions {
  db: Database;
  logger: Logger;
  /**
   * Acked messages, finished request records, idempotency keys, member events and task
   * events older than this many days are deleted. 0 keeps everything.
   */
  days: number;
  /** Protocol journal lines older than this many days are deleted. 0 keeps them all. */
  journalDays: number;
  /** How often the job runs. */
  intervalMs: number;
}

export interface RetentionCounts {
  messages: number;
  requests: number;
  sends: number;
  memberEvents: number;
  taskEvents: number;
  attempts: number;
}

export interface RetentionJob {
  /** Deletes everything past its age now, batch after batch; returns what it deleted. */
  runOnce(now?: Date): Promise<RetentionCounts>;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/**
 * Deletes old data on a timer, so storage stops growing with time: what agents consumed,
 * what protocols finished, and the journal, each after its configured age. Several server
 * processes may run it against one database: each statement deletes rows that are there,
 * and one that another process deleted first is simply not counted.
 */
export function startRetentionJob(options: RetentionOptions): RetentionJob {
  const { db, logger } = options;

  const drain = async (step: (cutoff: Date, limit: number) => Promise<number>, cutoff: Date) => {
    let total = 0;
    for (;;) {
      const n = await step(cutoff, BATCH);
      total += n;
      if (n < BATCH || periodic.stopped) return total;
    }
  };

  const runOnce = async (now = new Date()): Promise<RetentionCounts> => {
    const counts: RetentionCounts = {
      messages: 0,
      requests: 0,
      sends: 0,
      memberEvents: 0,
      taskEvents: 0,
      attempts: 0,
    };
    if (options.days > 0) {
      const cutoff = new Date(now.getTime() - options.days * DAY_MS);
      counts.messages = await drain((c, l) => deleteAckedMessages(db, c, l), cutoff);
      counts.requests = await drain((c, l) => deleteFinishedRequests(db, c, l), cutoff);
      counts.sends = await drain((c, l) => deleteOldSends(db, c, l), cutoff);
      counts.memberEvents = await drain((c, l) => deleteOldMemberEvents(db, c, l), cutoff);
      counts.taskEvents = await drain((c, l) => deleteOldTaskEvents(db, c, l), cutoff);
    }
    if (options.journalDays > 0) {
      const cutoff = new Date(now.getTime() - options.journalDays * DAY_MS);
      counts.attempts = await drain((c, l) => deleteOldAttempts(db, c, l), cutoff);
    }
    if (Object.values(counts).some((n) => n > 0)) {
      logger.info({ event: "retention", ...counts }, "deleted data past its retention age");
    }
    return counts;
  };

  const periodic = startPeriodic(
    () => runOnce(),
    options.intervalMs,
    (err) => logger.error({ event: "retention_failed", err }, "retention run failed"),
  );
  return { runOnce, stop: () => periodic.stop() };
}
