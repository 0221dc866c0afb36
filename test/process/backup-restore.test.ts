import { execFile } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { openDatabase } from "../../server/database-from-config.js";
import {
  createScratchPgDatabase,
  type DatabaseKind,
  databaseKinds,
  openTestDatabase,
  type TestDatabase,
} from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { inbox, planRequest, text } from "../support/protocol-helpers.js";

/**
 * docs/operations.md, "Backup and restore", done as written: a team's messages, requests and
 * tokens survive a PostgreSQL database copied with pg_dump -Fc and pg_restore, and an embedded
 * database's folder copied while its server is stopped. The copy is opened as the server
 * opens its database (openDatabase: migrations included, and none left to apply), under a new
 * app, so nothing can come from the first one's memory.
 */

const run = promisify(execFile);

interface Written {
  leadToken: string;
  workerToken: string;
  planId: string;
}

/** A team with a text and a pending plan in it, written through the service. */
async function writeTeam(env: TestEnv): Promise<Written> {
  const team = await env.team("worker");
  const worker = team.member("worker");
  await team.lead.send({ to: "worker", message: text("kept across a restore") });
  const plan = await worker.client.send({ to: "team-lead", message: planRequest("1. restore") });
  return { leadToken: team.leadToken, workerToken: worker.token, planId: plan.requestId };
}

/** What the restored server must still know: the inbox, the pending request, the tokens. */
async function expectRestored(env: TestEnv, written: Written): Promise<void> {
  const worker = env.client(written.workerToken);
  const lead = env.client(written.leadToken);
  const kept = await inbox(worker);
  expect(kept.map((e) => [e.seq, e.from, e.message?.kind.value])).toEqual([
    [1n, "team-lead", "kept across a restore"],
  ]);
  const plan = (await lead.getRequest({ requestId: written.planId })).request;
  expect(plan?.status).toBe(RequestStatus.PENDING);
  // The copy goes on where the original stopped: the next seq, the request still answerable.
  expect((await lead.send({ to: "worker", message: text("after the restore") })).seq).toBe(2n);
  await lead.send({
    to: "worker",
    message: {
      kind: { case: "planApprovalResponse", value: { requestId: written.planId, approve: true } },
    },
  });
  const answered = (await lead.getRequest({ requestId: written.planId })).request;
  expect(answered?.status).toBe(RequestStatus.APPROVED);
}

/**
 * Opens the copy as the server opens its database (migrations included: none may be left to
 * apply), starts a new app on it and checks it kept what was written.
 */
async function expectCopyServes(
  kind: DatabaseKind,
  where:
    | { databaseUrl: string; dataDir?: undefined }
    | { databaseUrl?: undefined; dataDir: string },
  written: Written,
): Promise<void> {
  const { db, applied } = await openDatabase({
    databaseUrl: where.databaseUrl,
    dataDir: where.dataDir ?? "",
    dbPoolSize: 5,
  });
  try {
    expect(applied, "migrations applied to the copy").toEqual([]);
    const env = await startTestEnv(kind, { db, url: where.databaseUrl, dispose: () => db.close() });
    try {
      await expectRestored(env, written);
    } finally {
      await env.close();
    }
  } finally {
    await db.close();
  }
}

const postgres = databaseKinds().find((k) => k.kind === "postgres");

describe.skipIf(postgres?.skip !== false)("backup and restore [postgres]", () => {
  it("pg_dump -Fc, pg_restore into an empty database, a server on the copy: everything kept", async () => {
    const original = await openTestDatabase("postgres");
    const dir = await mkdtemp(join(tmpdir(), "tp-backup-"));
    const restored = await createScratchPgDatabase("empty");
    try {
      const first = await startTestEnv("postgres", original);
      const written = await writeTeam(first);
      await first.close();

      const dump = join(dir, "team.dump");
      await run("pg_dump", ["-Fc", "-f", dump, original.url as string]);
      await run("pg_restore", ["--no-owner", "-d", restored.url, dump]);

      await expectCopyServes("postgres", { databaseUrl: restored.url }, written);
    } finally {
      await original.dispose();
      await restored.drop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("backup and restore [embedded]", () => {
  it("the data folder copied while its server is stopped, a server on the copy: everything kept", async () => {
    const parent = await mkdtemp(join(tmpdir(), "tp-backup-"));
    try {
      const dataDir = join(parent, "data");
      const { db } = await openDatabase({ databaseUrl: undefined, dataDir, dbPoolSize: 1 });
      const original: TestDatabase = { db, url: undefined, dispose: () => db.close() };
      const first = await startTestEnv("embedded", original);
      const written = await writeTeam(first);
      await first.close();
      await original.dispose();

      await cp(dataDir, join(parent, "copy"), { recursive: true });
      // The original is gone: only the copy can answer.
      await rm(dataDir, { recursive: true });

      await expectCopyServes("embedded", { dataDir: join(parent, "copy") }, written);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  }, 180_000);
});
