/**
 * Full-text search over many stored messages: `npm run bench:search [-- --pg <admin-url>]
 * [--count 1000000] [--queries 200] [--window N] [--explain] [--keep]`.
 *
 * A scratch PostgreSQL database (dropped after) gets one team of 9 members and `count`
 * messages written straight by SQL (the send path is bench:store's business): each a dozen
 * words drawn from a 20,000-word vocabulary with a Zipf-like skew, so a few words are in a
 * large part of the team's messages and most in very few. The GIN index is built after the
 * load (its build time is reported). Then the store's searchMessages (server/store/search.ts,
 * the query SearchMessages runs, snippets included) is timed, one query at a time, for a rare,
 * a middling and a common word, a two-word query and a phrase, as the lead (the whole team)
 * and as a teammate (its own inbox and what it sent), and the store's listThreads (ListThreads'
 * query: messages are in threads of four) for a first page and one 1,000 threads down.
 * Prints p50/p99 and the index's size; JSON to bench/results/search.json.
 */
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { Command } from "commander";
import type { Reader } from "../server/store/history-visibility.js";
import { migrate } from "../server/store/migrate.js";
import { createPgDatabase } from "../server/store/pg-database.js";
import { searchMessages } from "../server/store/search.js";
import { listThreads } from "../server/store/threads.js";
import { Cleanups } from "./cleanup.js";
import { createScratchDatabase, DEFAULT_PG_ADMIN_URL } from "./database-target.js";
import { LatencyHistogram } from "./histogram.js";
import { describeMachine } from "./machine.js";

const log = (line: string) => process.stderr.write(`${line}\n`);
const VOCABULARY = 20_000;
const MEMBERS = 9;
const BATCH = 50_000;

async function main(): Promise<void> {
  const o = new Command("bench:search")
    .option("--pg <admin-url>", "where the scratch database is made", DEFAULT_PG_ADMIN_URL)
    .option("--count <n>", "messages to store", "1000000")
    .option("--queries <n>", "timed searches per query kind and reader", "200")
    .option("--window <n>", "matches a search ranks (the store's SEARCH_WINDOW if not given)")
    .option("--explain", "print the plans of a common-word search and a ListThreads page first")
    .option("--keep", "leave the scratch database (its URL is printed) to study plans with psql")
    .option("--out <file>", "JSON results", "bench/results/search.json")
    .parse()
    .opts<{
      pg: string;
      count: string;
      queries: string;
      window?: string;
      explain?: boolean;
      keep?: boolean;
      out: string;
    }>();
  const window = o.window === undefined ? undefined : Number(o.window);
  const count = Number(o.count);
  const cleanups = new Cleanups();
  try {
    const url = await createScratchDatabase(o.pg, "tp_bench_search", cleanups, o.keep);
    if (o.keep) log(`scratch database kept: ${url}`);
    const db = createPgDatabase({
      connectionString: url,
      poolSize: 2,
      statementTimeoutMs: 900_000,
    });
    cleanups.add("close the store", () => db.close());
    await migrate(db);
    const [team] = await db.query<{ id: number }>(
      "INSERT INTO teams (name) VALUES ('bench-search') RETURNING id",
    );
    const teamId = team?.id ?? 0;
    const members = await db.query<{ id: number }>(
      `INSERT INTO members (team_id, name, role, token_hash)
       SELECT $1, CASE WHEN i = 0 THEN 'team-lead' ELSE 'm' || i END,
              CASE WHEN i = 0 THEN 'lead' ELSE 'teammate' END, $2::bytea || i::text::bytea
       FROM generate_series(0, $3 - 1) i ORDER BY i RETURNING id`,
      [teamId, randomBytes(16), MEMBERS],
    );
    const ids = members.map((m) => m.id);
    await db.query("INSERT INTO inboxes (member_id) SELECT unnest($1::int[])", [ids]);
    // The index is built once, after the load: a bulk load through it would be slower. The
    // words go straight into message_search (one row per envelope, as the search indexer
    // writes them), so the queue trigger is off for the load.
    await db.query("DROP INDEX message_search_words");
    await db.query("ALTER TABLE messages DISABLE TRIGGER messages_queue_search");
    // Migration 014's side tables, when the schema has them (the bench runs against the
    // commit before it too, for A/B): each envelope's position, each thread's activity.
    const [shape] = await db.query<{ position: boolean; threads: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM information_schema.columns
                      WHERE table_name = 'message_search' AND column_name = 'position') AS position,
              to_regclass('thread_activity') IS NOT NULL AS threads`,
    );
    const loadStart = performance.now();
    for (let from = 0; from < count; from += BATCH) {
      const n = Math.min(BATCH, count - from);
      // Row g goes to member g % 9 with seq g / 9 + 1, from member (g + 1) % 9, in a thread
      // of 4; a word's index is 20000^u - 1 for a uniform u: word 0 in most messages, most
      // words in few.
      await db.query(
        `WITH stored AS (
           INSERT INTO messages (recipient_id, seq, team_id, sender_id, from_name, to_name, kind,
                                 body, envelope_id, thread_id)
           SELECT ($1::int[])[g % $3 + 1], g / $3 + 1, $2, ($1::int[])[(g + 1) % $3 + 1],
                  'm' || ((g + 1) % $3), 'm' || (g % $3), 'text', '\\x0a0568656c6c6f'::bytea,
                  'env_' || g, 'env_' || (g / 4 * 4)
           FROM generate_series($5::bigint, $5::bigint + $6 - 1) g
           RETURNING envelope_id, feed_position
         )
         INSERT INTO message_search (envelope_id, team_id, search_text${shape?.position ? ", position" : ""})
         SELECT st.envelope_id, $2,
                (SELECT string_agg('w' || (floor(power($4::float8, random() + k * 0)) - 1), ' ')
                 FROM generate_series(1, 12 + (length(st.envelope_id) * 0)::int) k)
                ${shape?.position ? ", st.feed_position" : ""}
         FROM stored st`,
        [ids, teamId, MEMBERS, VOCABULARY, from, n],
      );
      log(`stored ${from + n} messages`);
    }
    if (shape?.threads) {
      await db.query(
        `INSERT INTO thread_activity (team_id, reader_id, thread_id, last_position)
         SELECT m.team_id, r.reader_id, m.thread_id, max(m.feed_position)
         FROM messages m
         CROSS JOIN LATERAL (VALUES (0), (m.recipient_id), (m.sender_id)) r (reader_id)
         WHERE r.reader_id IS NOT NULL
         GROUP BY 1, 2, 3`,
      );
    }
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const indexStart = performance.now();
    await db.query("CREATE INDEX message_search_words ON message_search USING gin (search)");
    const indexSeconds = (performance.now() - indexStart) / 1000;
    await db.query("ALTER TABLE messages ENABLE TRIGGER messages_queue_search");
    await db.query("ANALYZE messages");
    await db.query("ANALYZE message_search");
    if (shape?.threads) await db.query("ANALYZE thread_activity");
    const [sizes] = await db.query<{ index_bytes: string; table_bytes: string }>(
      `SELECT pg_relation_size('message_search_words')::text AS index_bytes,
              (pg_total_relation_size('messages') + pg_total_relation_size('message_search'))::text
                AS table_bytes`,
    );
    const lead: Reader = { teamId, memberId: ids[0] ?? 0, wholeTeam: true };
    const mate: Reader = { teamId, memberId: ids[1] ?? 0, wholeTeam: false };
    if (o.explain) {
      // The store's own statements, run under EXPLAIN ANALYZE (their rows are then the plan's).
      const explaining = {
        async query<R extends object>(sql: string, params?: unknown[]): Promise<R[]> {
          const plan = await db.query<{ "QUERY PLAN": string }>(
            `EXPLAIN (ANALYZE, BUFFERS) ${sql}`,
            params,
          );
          log(plan.map((r) => r["QUERY PLAN"]).join("\n"));
          return [];
        },
      };
      for (const reader of [lead, mate]) {
        log(`--- search "w0" as ${reader === lead ? "lead" : "teammate"}`);
        await searchMessages(explaining, reader, { query: "w0" }, 0, 21, window);
        log(`--- ListThreads as ${reader === lead ? "lead" : "teammate"}`);
        await listThreads(explaining, reader, undefined, 51);
      }
    }
    const kinds: [string, () => string][] = [
      ["rare word (rank > 5000)", () => `w${5000 + Math.floor(Math.random() * 15000)}`],
      ["middling word (rank 50-500)", () => `w${50 + Math.floor(Math.random() * 450)}`],
      ["common word (rank 0-4)", () => `w${Math.floor(Math.random() * 5)}`],
      ["two words (rank 10-100)", () => `w${10 + rnd(90)} w${10 + rnd(90)}`],
      ['phrase "wA wB" (rank 0-20)', () => `"w${rnd(20)} w${rnd(20)}"`],
    ];
    const rows: Record<string, unknown>[] = [];
    for (const [kind, query] of kinds) {
      for (const [who, reader] of [
        ["lead", lead],
        ["teammate", mate],
      ] as const) {
        const h = new LatencyHistogram();
        let hits = 0;
        for (let i = 0; i < Number(o.queries); i++) {
          const t = performance.now();
          hits += (await searchMessages(db, reader, { query: query() }, 0, 21, window)).length;
          h.recordMs(performance.now() - t);
        }
        const s = h.summary();
        rows.push({
          kind,
          who,
          p50Ms: s.p50Ms,
          p99Ms: s.p99Ms,
          meanHits: hits / Number(o.queries),
        });
        log(`${kind} as ${who}: p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms`);
      }
    }
    // ListThreads: the first page (50 threads) and a page a thousand threads down.
    for (const [who, reader] of [
      ["lead", lead],
      ["teammate", mate],
    ] as const) {
      const pages: [string, bigint | undefined][] = [["first page", undefined]];
      const deep = (await listThreads(db, reader, undefined, 1001)).at(-1)?.lastPosition;
      if (deep !== undefined) pages.push(["page 1,000 threads down", deep]);
      for (const [page, before] of pages) {
        const h = new LatencyHistogram();
        let threads = 0;
        for (let i = 0; i < Number(o.queries); i++) {
          const t = performance.now();
          threads += (await listThreads(db, reader, before, 51)).length;
          h.recordMs(performance.now() - t);
        }
        const s = h.summary();
        const kind = `ListThreads, ${page}`;
        rows.push({
          kind,
          who,
          p50Ms: s.p50Ms,
          p99Ms: s.p99Ms,
          meanHits: threads / Number(o.queries),
        });
        log(`${kind} as ${who}: p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms`);
      }
    }
    const result = {
      machine: describeMachine(),
      messages: count,
      loadSeconds,
      indexSeconds,
      indexBytes: Number(sizes?.index_bytes),
      tableBytes: Number(sizes?.table_bytes),
      searches: rows,
    };
    console.table(rows);
    console.log(
      `${count} messages; GIN index ${(result.indexBytes / 2 ** 20).toFixed(0)} MiB (table with its indexes ${(result.tableBytes / 2 ** 20).toFixed(0)} MiB); load ${loadSeconds.toFixed(0)} s, index build ${indexSeconds.toFixed(0)} s`,
    );
    const out = resolve(o.out);
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await cleanups.runAll(log);
  }
}

const rnd = (n: number) => Math.floor(Math.random() * n);

await main();
