import type { BaselineDb, SqlConnection } from "../baseline-db.js";
import { LatencyHistogram, type LatencySummary, median, round } from "../histogram.js";
import type { Profile } from "../profile.js";

export type BaselineStatement = "insert" | "insert+notify";

export interface BaselineRun {
  statement: BaselineStatement;
  concurrency: number;
  commitsPerSec: number;
  commits: number;
  /** Time of one autocommitted statement: what one durable write costs at best. */
  latency: LatencySummary;
}

export interface BaselineResult {
  where: string;
  runs: BaselineRun[];
  /** One statement inserting `rows` rows in one commit (what a broadcast must store). */
  batch: { rows: number; medianMs: number; samplesMs: number[] };
  /** Notifications the listener received during the insert+notify runs. */
  notificationsReceived: number;
}

const CHANNEL = "bench_baseline";
// About the size of a short text message in protobuf binary.
const BODY = Buffer.alloc(24, 7);

/**
 * The limit: what the same database does with no service in front of it. A plain one-row
 * INSERT per commit, and the same with a NOTIFY in the transaction (NOTIFY serialises
 * commits on a cluster-wide lock), each from 1, 8 and 64 connections in a closed loop.
 */
export async function runBaseline(
  db: BaselineDb,
  profile: Profile,
  log: (line: string) => void,
  signal: AbortSignal,
): Promise<BaselineResult> {
  const p = profile.baseline;
  let notificationsReceived = 0;
  const unlisten = await db.listen(CHANNEL, () => {
    notificationsReceived++;
  });
  try {
    const insert = `INSERT INTO ${db.table} (inbox, body) VALUES ($1, $2)`;
    const insertNotify = `WITH r AS (INSERT INTO ${db.table} (inbox, body) VALUES ($1, $2)
      RETURNING id) SELECT pg_notify('${CHANNEL}', r.id::text) FROM r`;
    const runs: BaselineRun[] = [];
    for (const [statement, sql] of [
      ["insert", insert],
      ["insert+notify", insertNotify],
    ] as const) {
      for (const concurrency of profile.concurrency) {
        signal.throwIfAborted();
        const run = await closedLoop(db, sql, concurrency, p, signal);
        runs.push({ statement, concurrency, ...run });
        log(
          `  baseline ${statement} x${concurrency}: ${run.commitsPerSec.toFixed(0)} commits/s, ` +
            `p50 ${run.latency.p50Ms} ms`,
        );
      }
    }
    const batch = await batchInsert(db, p.batchRows, p.batchRepeats, signal);
    log(`  baseline ${p.batchRows}-row commit: median ${batch.medianMs} ms`);
    return { where: db.where, runs, batch, notificationsReceived };
  } finally {
    await unlisten();
  }
}

async function closedLoop(
  db: BaselineDb,
  sql: string,
  concurrency: number,
  p: Profile["baseline"],
  signal: AbortSignal,
): Promise<Omit<BaselineRun, "statement" | "concurrency">> {
  const connections: SqlConnection[] = [];
  try {
    for (let i = 0; i < concurrency; i++) connections.push(await db.connect());
    const histogram = new LatencyHistogram();
    const measureFrom = performance.now() + p.warmupSec * 1000;
    const end = measureFrom + p.measureSec * 1000;
    let commits = 0;
    await Promise.all(
      connections.map(async (c, worker) => {
        for (let k = 0; !signal.aborted; k++) {
          const started = performance.now();
          if (started >= end) break;
          await c.query(sql, [worker * 1_000_000 + k, BODY]);
          const done = performance.now();
          if (done >= measureFrom && done < end) {
            commits++;
            histogram.recordMs(done - started);
          }
        }
      }),
    );
    signal.throwIfAborted();
    return {
      commitsPerSec: Math.round(commits / p.measureSec),
      commits,
      latency: histogram.summary(),
    };
  } finally {
    await Promise.all(connections.map((c) => c.close().catch(() => {})));
  }
}

async function batchInsert(db: BaselineDb, rows: number, repeats: number, signal: AbortSignal) {
  const c = await db.connect();
  try {
    const sql = `INSERT INTO ${db.table} (inbox, body) SELECT g, $1 FROM generate_series(1, $2) g`;
    const samplesMs: number[] = [];
    for (let i = 0; i < repeats; i++) {
      signal.throwIfAborted();
      const started = performance.now();
      await c.query(sql, [BODY, rows]);
      samplesMs.push(round(performance.now() - started));
    }
    return { rows, medianMs: round(median(samplesMs)), samplesMs };
  } finally {
    await c.close();
  }
}
