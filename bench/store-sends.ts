/**
 * The store's own ceiling for durable sends: `npm run bench:store [-- --pg <admin-url>]`.
 *
 * The server's `send()` (server/store/sender.ts) called in this process, without RPC, auth or
 * rules, by closed loops of 1, 8 and 64 concurrent senders on a scratch PostgreSQL database
 * (dropped after): spread over 64 inboxes and all into the lead's inbox, each with and
 * without a message_id (the TypeScript client gives every send one). What the main bench's
 * throughput scenario cannot reach here is not the store's doing.
 *
 * After each send, the recipients and the team are woken through the cluster bus, as the
 * Send handler does: its coalesced NOTIFY to other replicas is a commit of its own.
 *
 * Beside each figure: the commits it took (pg_stat_database.xact_commit: the sends' batches
 * and the bus's NOTIFYs), and the CPU split between this process and the PostgreSQL backends
 * serving its pool (their /proc stat; the WAL writer and the checkpointer are not counted).
 * Prints a table; writes JSON to bench/results/store-sends.json (or --out).
 */

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { Command } from "commander";
import { type ClusterBus, createClusterBus } from "../server/inbox/cluster-bus.js";
import { createInboxHub } from "../server/inbox/hub.js";
import { createRequestWaiters } from "../server/inbox/request-waiters.js";
import { createTeamHub } from "../server/inbox/team-hub.js";
import {
  type SearchIndexer,
  startSearchIndexer,
  withWakeHook,
} from "../server/jobs/search-indexer.js";
import { silentLogger } from "../server/logger.js";
import type { Database } from "../server/store/database.js";
import { ack, inboxPosition } from "../server/store/inbox.js";
import { addMember, createTeam } from "../server/store/members.js";
import { migrate } from "../server/store/migrate.js";
import { createPgDatabase } from "../server/store/pg-database.js";
import type { SendInput } from "../server/store/send.js";
import { createSender } from "../server/store/sender.js";
import { Cleanups } from "./cleanup.js";
import { createScratchDatabase, DEFAULT_PG_ADMIN_URL } from "./database-target.js";
import { LatencyHistogram, type LatencySummary } from "./histogram.js";
import { describeMachine, loadAverage1m } from "./machine.js";

type Pattern = "spread" | "one-inbox";

interface StoreRun {
  pattern: Pattern;
  keyed: boolean;
  concurrency: number;
  sendsPerSec: number;
  errors: number;
  firstError?: string;
  latency: LatencySummary;
  commitsPerSend: number;
  cpu: { nodeUsPerSend: number; postgresUsPerSend: number };
  /** How long the search indexer took to catch up after the run's end. */
  indexLagMs: number;
}

const log = (line: string) => process.stderr.write(`${line}\n`);
// A stored body is always a serialized Message (the store renders its words for search).
const body = (s: string) =>
  toBinary(MessageSchema, create(MessageSchema, { kind: { case: "text", value: s } }));
const hz = 100; // USER_HZ: /proc stat's clock ticks per second on Linux

async function main(): Promise<void> {
  const o = new Command("bench:store")
    .option("--pg <admin-url>", "where the scratch database is made", DEFAULT_PG_ADMIN_URL)
    .option("--out <file>", "where the JSON goes", "bench/results/store-sends.json")
    .option("--seconds <n>", "measured seconds per run (after 1 s of warm-up)", "4")
    .option("--concurrency <list>", "concurrent senders", "1,8,64")
    .option("--pool <n>", "connections in the store's pool (the server's default: 20)", "20")
    .parse()
    .opts<{ pg: string; out: string; seconds: string; concurrency: string; pool: string }>();
  const cleanups = new Cleanups();
  try {
    const url = await createScratchDatabase(o.pg, "tp_bench_store", cleanups);
    const db = createPgDatabase({
      connectionString: url,
      poolSize: Number(o.pool),
      applicationName: "bench-store",
    });
    cleanups.add("close the store", () => db.close());
    await migrate(db);
    // The search indexer runs as in the server, on the team wake-ups each send makes: its
    // work (rendering words, the tsvector, the GIN index) is in every figure, and each run
    // ends only once it caught up.
    const indexer = startSearchIndexer({ db, logger: silentLogger() });
    cleanups.add("stop the search indexer", () => indexer.stop());
    const bus = createClusterBus({
      db,
      hub: createInboxHub(),
      waiters: createRequestWaiters(),
      teams: withWakeHook(createTeamHub(), indexer.poke),
      logger: silentLogger(),
    });
    cleanups.add("close the cluster bus", () => bus.close());
    await bus.ready;
    const startLoad = loadAverage1m();
    const team = await makeTeam(db, 64);
    const runs: StoreRun[] = [];
    for (const keyed of [false, true]) {
      for (const pattern of ["spread", "one-inbox"] as const) {
        for (const concurrency of o.concurrency.split(",").map(Number)) {
          const run = await closedLoop(
            db,
            bus,
            indexer,
            team,
            { pattern, keyed, concurrency },
            Number(o.seconds),
          );
          runs.push(run);
          log(
            `${pattern}${keyed ? " keyed" : ""} x${concurrency}: ${run.sendsPerSec}/s, ` +
              `p50 ${run.latency.p50Ms} ms, p99 ${run.latency.p99Ms} ms, ` +
              `${run.commitsPerSend} commits/send, node ${run.cpu.nodeUsPerSend} µs/send, ` +
              `postgres ${run.cpu.postgresUsPerSend} µs/send, index lag ${run.indexLagMs} ms` +
              (run.errors ? `, ${run.errors} errors (${run.firstError})` : ""),
          );
        }
      }
    }
    const report = {
      startedAt: new Date().toISOString(),
      machine: { ...describeMachine(), loadAverage1m: startLoad, loadAverageEnd: loadAverage1m() },
      pool: Number(o.pool),
      runs,
    };
    process.stdout.write(table(report.runs, startLoad, report.machine.loadAverageEnd));
    const out = resolve(o.out);
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${out}`);
  } finally {
    await cleanups.runAll(log);
  }
}

interface Team {
  teamId: number;
  lead: { id: number; name: string };
  mates: { id: number; name: string }[];
}

async function makeTeam(db: Database, teammates: number): Promise<Team> {
  const hash = () => randomBytes(32);
  const lead = await createTeam(db, "bench-store", {
    name: "team-lead",
    tokenHash: hash(),
    permissionMode: "default",
  });
  const mates = [];
  for (let i = 0; i < teammates; i++) {
    const m = await addMember(db, lead.teamId, `m${i}`, hash(), "default");
    mates.push({ id: m.id, name: m.name });
  }
  return { teamId: lead.teamId, lead: { id: lead.id, name: lead.name }, mates };
}

async function closedLoop(
  db: Database,
  bus: ClusterBus,
  indexer: SearchIndexer,
  team: Team,
  shape: { pattern: Pattern; keyed: boolean; concurrency: number },
  seconds: number,
): Promise<StoreRun> {
  // Every inbox drained first, as agents ack what they read: the backlog limit is not what
  // is measured.
  for (const m of [team.lead, ...team.mates]) {
    const { lastSeq } = await inboxPosition(db, m.id);
    if (lastSeq > 0n) await ack(db, m.id, lastSeq);
  }
  // A fresh sender per run, as a fresh server would have: nothing queued from the last run.
  // The backlog check runs (its cost counts) with limits no run reaches.
  const sender = createSender(db, { maxMessages: 1e9, maxBytes: 1e12 });
  const histogram = new LatencyHistogram();
  const measureFrom = performance.now() + 1000;
  const end = measureFrom + seconds * 1000;
  let sends = 0;
  let errors = 0;
  let firstError: string | undefined;
  const run = randomBytes(3).toString("hex");
  const edge = (at: number) =>
    new Promise<Sample>((ok) =>
      setTimeout(() => sample(db).then(ok), Math.max(0, at - performance.now())),
    );
  const from = edge(measureFrom);
  const to = edge(end);
  const { mates } = team;
  await Promise.all(
    Array.from({ length: shape.concurrency }, async (_, i) => {
      const me = mates[i % mates.length] as Team["lead"];
      for (let k = 0; ; k++) {
        const started = performance.now();
        if (started >= end) break;
        const to =
          shape.pattern === "one-inbox"
            ? team.lead.name
            : (mates[(i + 1 + (k % (mates.length - 1))) % mates.length] as Team["lead"]).name;
        const input: SendInput = {
          teamId: team.teamId,
          sender: me,
          to,
          kind: "text",
          body: body(`t${i}-${k}`),
          ...(shape.keyed ? { messageId: `${run}-${i}-${k}`, fingerprint: randomBytes(32) } : {}),
        };
        try {
          const result = await sender.send(input);
          bus.hub.wake(result.deliveries.map((d) => d.memberId));
          bus.teams.wake([team.teamId]);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          continue;
        }
        const done = performance.now();
        if (done >= measureFrom && done < end) {
          sends++;
          histogram.recordMs(done - started);
        }
      }
    }),
  );
  const a = await from;
  // The run's sends are indexed before its end is sampled: the indexer's CPU is the run's.
  // What it still does after `end` for sends measured before is counted, for sends of the
  // last moment (not measured) too: a slight overcount.
  await to;
  const indexedAt = performance.now();
  await indexer.idle();
  const indexLagMs = Math.round(performance.now() - indexedAt);
  const b = await sample(db);
  const per = (x: number) => Math.round(x / Math.max(1, sends));
  return {
    ...shape,
    sendsPerSec: Math.round(sends / seconds),
    errors,
    ...(firstError ? { firstError } : {}),
    latency: histogram.summary(),
    indexLagMs,
    commitsPerSend: Math.round(((b.commits - a.commits) / Math.max(1, sends)) * 1000) / 1000,
    cpu: {
      nodeUsPerSend: per(b.nodeUs - a.nodeUs),
      postgresUsPerSend: per(postgresUsBetween(a, b)),
    },
  };
}

interface Sample {
  commits: number;
  nodeUs: number;
  /** CPU ticks so far of each backend serving the pool. */
  backends: Map<number, number>;
}

/** The backends' CPU between two samples (one that ended meanwhile is not counted). */
function postgresUsBetween(a: Sample, b: Sample): number {
  let ticks = 0;
  for (const [pid, t] of b.backends) ticks += t - (a.backends.get(pid) ?? 0);
  return (ticks / hz) * 1e6;
}

/** Commits so far in this database, and CPU so far of this process and of its backends. */
async function sample(db: Database): Promise<Sample> {
  const cpu = process.cpuUsage();
  const [stats] = await db.query<{ commits: bigint; pids: number[] }>(
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
            (SELECT array_agg(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'bench-store') AS pids`,
  );
  const backends = new Map<number, number>();
  for (const pid of stats?.pids ?? []) {
    try {
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      backends.set(pid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // A backend that ended between the query and the read: its CPU is lost to this sample.
    }
  }
  return {
    commits: Number(stats?.commits ?? 0n),
    nodeUs: cpu.user + cpu.system,
    backends,
  };
}

function table(runs: StoreRun[], startLoad: number, endLoad: number): string {
  const lines = [
    `store sends (no RPC), load average ${startLoad} at start, ${endLoad} at end`,
    "pattern          keyed  conc     sends/s   p50 ms   p99 ms  commits/send  node µs/send  postgres µs/send",
  ];
  for (const r of runs) {
    lines.push(
      [
        r.pattern.padEnd(15),
        (r.keyed ? "yes" : "no").padStart(6),
        String(r.concurrency).padStart(5),
        r.sendsPerSec.toLocaleString("en").padStart(11),
        String(r.latency.p50Ms).padStart(8),
        String(r.latency.p99Ms).padStart(8),
        String(r.commitsPerSend).padStart(13),
        String(r.cpu.nodeUsPerSend).padStart(13),
        String(r.cpu.postgresUsPerSend).padStart(17),
      ].join(" ") + (r.errors ? `  ${r.errors} errors: ${r.firstError}` : ""),
    );
  }
  return `${lines.join("\n")}\n`;
}

await main();
