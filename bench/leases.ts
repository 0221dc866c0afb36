/**
 * Leases: `npm run bench:leases [-- --pg <admin-url>]` (embedded without --pg).
 *
 * What the team's lease lock costs (protocols/leases.ts: AcquireLease reads the live leases
 * under `SELECT … FROM teams … FOR NO KEY UPDATE`, since glob overlap is no operator an
 * exclusion constraint could index): 20 members acquiring and releasing disjoint leases in
 * closed loops, in one team (every acquire waits for the one before) and in 20 teams (none
 * waits); and 20 racing acquires of overlapping globs (one holds). Then the overlap decision
 * alone on the worst pairs of 1,024-character globs. Prints lines; asserts nothing.
 */
import { randomBytes } from "node:crypto";
import { Command } from "commander";
import type { Caller } from "../server/caller.js";
import { parseLeaseResource, resourcesOverlap } from "../server/domain/lease-patterns.js";
import { acquireLease, releaseLease } from "../server/protocols/leases.js";
import type { Database } from "../server/store/database.js";
import { openEmbeddedDatabase } from "../server/store/embedded-database.js";
import { addMember, createTeam } from "../server/store/members.js";
import { migrate } from "../server/store/migrate.js";
import { createPgDatabase } from "../server/store/pg-database.js";
import { Cleanups } from "./cleanup.js";
import { createScratchDatabase } from "./database-target.js";
import { loadAverage1m } from "./machine.js";

const TTLS = { defaultMs: 60_000, maxMs: 3_600_000 };
const log = (line: string) => process.stdout.write(`${line}\n`);

async function callers(db: Database, teams: number, perTeam: number): Promise<Caller[]> {
  const out: Caller[] = [];
  for (let t = 0; t < teams; t++) {
    const teamName = `bench-leases-${randomBytes(4).toString("hex")}`;
    const lead = await createTeam(db, teamName, {
      name: "team-lead",
      tokenHash: randomBytes(32),
      permissionMode: "default",
    });
    for (let i = 0; i < perTeam; i++) {
      const m = await addMember(db, lead.teamId, `m${i}`, randomBytes(32), "default");
      out.push({
        id: m.id,
        teamId: lead.teamId,
        teamName,
        name: m.name,
        role: "teammate",
        lead: { id: lead.id, name: lead.name, permissionMode: "default" },
      });
    }
  }
  return out;
}

/** Closed loops, one per caller: acquire a lease of its own, release it; acquires per second. */
async function loops(db: Database, who: Caller[], seconds: number): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    who.map(async (c, i) => {
      while (Date.now() < end) {
        const lease = await db.transaction((tx) =>
          acquireLease(
            tx,
            c,
            { resource: `src/m${i}/**`, mode: "exclusive", ttlSeconds: 0, reason: "" },
            TTLS,
          ),
        );
        await db.transaction((tx) => releaseLease(tx, c, { leaseId: lease.leaseId, reason: "" }));
        n++;
      }
    }),
  );
  return n / seconds;
}

async function race(db: Database, who: Caller[]): Promise<{ held: number; ms: number }> {
  const globs = ["src/**", "src/a/**", "src/a/b.ts", "**/b.ts", "src/*/b.ts"];
  const t0 = performance.now();
  const results = await Promise.allSettled(
    who.map((c, i) =>
      db.transaction((tx) =>
        acquireLease(
          tx,
          c,
          { resource: globs[i % globs.length] ?? "", mode: "exclusive", ttlSeconds: 0, reason: "" },
          TTLS,
        ),
      ),
    ),
  );
  return {
    held: results.filter((r) => r.status === "fulfilled").length,
    ms: performance.now() - t0,
  };
}

function overlapWorst(): void {
  const pairs: [string, string][] = [
    ["a*".repeat(511) + "c", "*a".repeat(512)],
    ["*a".repeat(512), `${"*a".repeat(511)}*`],
    [`${"a*/".repeat(341)}c`, `${"*a/".repeat(341)}*`],
  ];
  for (const [a, b] of pairs) {
    const ra = parseLeaseResource(a);
    const rb = parseLeaseResource(b);
    resourcesOverlap(ra, rb);
    const times: number[] = [];
    for (let k = 0; k < 5; k++) {
      const t0 = performance.now();
      resourcesOverlap(ra, rb);
      times.push(performance.now() - t0);
    }
    times.sort((x, y) => x - y);
    log(
      `overlap ${a.slice(0, 12)}… (${a.length}) × ${b.slice(0, 12)}… (${b.length}): median ${times[2]?.toFixed(1)} ms, worst ${times[4]?.toFixed(1)} ms of 5`,
    );
  }
}

const o = new Command()
  .option("--pg <url>", "a PostgreSQL admin URL to make a scratch database on")
  .option("--seconds <n>", "length of each closed-loop run", "5")
  .parse()
  .opts<{ pg?: string; seconds: string }>();
const cleanups = new Cleanups();
try {
  let db: Database;
  if (o.pg) {
    const url = await createScratchDatabase(o.pg, "tp_bench_leases", cleanups);
    db = createPgDatabase({ connectionString: url, poolSize: 24, applicationName: "bench-leases" });
  } else {
    db = await openEmbeddedDatabase({});
  }
  cleanups.add("close the store", () => db.close());
  await migrate(db);
  log(
    `database: ${o.pg ? "PostgreSQL (scratch)" : "embedded (PGlite)"}; load average ${loadAverage1m()}`,
  );
  const seconds = Number(o.seconds);
  const oneTeam = await callers(db, 1, 20);
  log(
    `20 members of one team, disjoint leases: ${(await loops(db, oneTeam, seconds)).toFixed(0)} acquire+release/s`,
  );
  const manyTeams = await callers(db, 20, 1);
  log(
    `20 members of 20 teams, disjoint leases: ${(await loops(db, manyTeams, seconds)).toFixed(0)} acquire+release/s`,
  );
  for (let k = 0; k < 3; k++) {
    const r = await race(db, await callers(db, 1, 20));
    log(
      `20 racing acquires of overlapping globs: ${r.held} held, all answered in ${r.ms.toFixed(0)} ms`,
    );
  }
  overlapWorst();
} finally {
  await cleanups.runAll((line) => process.stderr.write(`${line}\n`));
}
