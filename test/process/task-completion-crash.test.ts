import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { taskChangeName } from "../../client/names.js";
import { RequestStatus, TaskProgress, TaskStatus } from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import {
  afterThisTest,
  freePort,
  type ServerProcess,
  startServerOn,
  tempDataDir,
  waitFor,
  withTimeout,
} from "../support/child-server.js";
import { createScratchPgDatabase } from "../support/databases.js";

/**
 * An approved sign-off completes its task, unblocks the tasks waiting on it and tells the lead
 * of each that became ready, in one transaction: the server killed with SIGKILL in between
 * leaves all of it or none of it. Against the real server as a process.
 */

const hasPg = inject("pgAdminUrl") !== "";

interface Team {
  lead: TeamClient;
  alice: TeamClient;
  leadToken: string;
  aliceToken: string;
}

async function newTeam(url: string): Promise<Team> {
  const anon = createTeamClient({ baseUrl: url, timeoutMs: 5_000 });
  const created = await anon.createTeam("crash-tasks");
  const lead = anon.withToken(created.token);
  const aliceToken = (await lead.addMember("alice")).token;
  return { lead, alice: lead.withToken(aliceToken), leadToken: created.token, aliceToken };
}

/** The READY notices in the lead's inbox, by task id. */
async function readyNotices(lead: TeamClient): Promise<string[]> {
  const { envelopes } = await lead.readInbox({ afterSeq: 0, limit: 1000 });
  return envelopes.flatMap((e) =>
    e.from === "" &&
    e.message?.kind.case === "taskNotification" &&
    e.message.kind.value.status === TaskStatus.READY
      ? [e.message.kind.value.taskId]
      : [],
  );
}

/** The team's feed from the start up to its first heartbeat: the task events, as "<id> <change>". */
async function taskEvents(lead: TeamClient): Promise<string[]> {
  const events: TeamEvent[] = [];
  const stop = new AbortController();
  for await (const r of lead.rpc.watchTeam({}, { signal: stop.signal })) {
    if (r.kind.case === "heartbeat") break;
    if (r.kind.case === "event") events.push(r.kind.value);
  }
  stop.abort();
  return events.flatMap((e) =>
    e.change.case === "task"
      ? [`${e.change.value.task?.taskId} ${taskChangeName(e.change.value.change)}`]
      : [],
  );
}

describe("a sign-off's completion across a server crash", () => {
  it.skipIf(!hasPg)(
    "killed while the approval's transaction waits inside it, after the task moved: none of it is stored; approved after the restart: all of it [postgres]",
    async () => {
      const scratch = await createScratchPgDatabase();
      afterThisTest(() => scratch.drop());
      const env = { DATABASE_URL: scratch.url, HEARTBEAT_INTERVAL_MS: "200" };
      const port = await freePort();
      let server: ServerProcess = await startServerOn(port, env);
      afterThisTest(async () => {
        server.child.kill("SIGKILL");
      });
      const url = `http://127.0.0.1:${port}`;
      const t = await newTeam(url);
      // a; b and c wait on a; d waits on a and on x, which stays open.
      for (const [id, ...blockedBy] of [["a"], ["x"], ["b", "a"], ["c", "a"], ["d", "a", "x"]]) {
        await t.lead.createTask(`do ${id}`, { taskId: id, blockedBy });
      }
      await t.lead.assignTask("a", "alice");
      const signoff = await t.alice.requestSignoff("a", "done");

      // Hold the lead's inbox: the approval's transaction stops at its first ready notice,
      // after the task moved, the sign-off was approved and the waiting tasks' events stored.
      const holder = new pg.Client({ connectionString: scratch.url });
      // Its connection ends when the scratch database is dropped: that is no error here.
      holder.on("error", () => {});
      await holder.connect();
      afterThisTest(() => holder.end());
      await holder.query("BEGIN");
      await holder.query(
        `SELECT 1 FROM inboxes i JOIN members m ON m.id = i.member_id
         WHERE m.name = 'team-lead' FOR UPDATE OF i`,
      );
      const approving = t.lead.approveSignoff(signoff.requestId, { to: "alice" }).then(
        () => "approved",
        (e: Error) => e.message,
      );
      const waiting = await withTimeout(
        "the approval to wait on the lead's inbox",
        30_000,
        (async () => {
          for (;;) {
            // Inside a transaction pg_stat_activity is read once and kept: read it afresh.
            await holder.query("SELECT pg_stat_clear_snapshot()");
            const { rows } = await holder.query<{ pid: number; query: string }>(
              `SELECT pid, query FROM pg_stat_activity
               WHERE datname = current_database() AND wait_event_type = 'Lock'
                 AND query LIKE '%UPDATE inboxes%'`,
            );
            if (rows[0]) return rows[0];
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      );
      // Inside that transaction the task is completed already: its row is locked and updated.
      const { rows: inside } = await holder.query<{ locked: boolean }>(
        `SELECT count(*) > 0 AS locked FROM pg_locks l
         WHERE l.pid = $1 AND l.locktype = 'advisory'`,
        [waiting.pid],
      );
      expect(inside[0]?.locked).toBe(true);

      server.child.kill("SIGKILL");
      await server.exited;
      await holder.query("ROLLBACK");
      // The killed server's backend finishes its statement, finds its client gone and rolls back.
      await withTimeout(
        "the killed server's backend to end",
        30_000,
        (async () => {
          for (;;) {
            const { rows } = await holder.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [
              waiting.pid,
            ]);
            if (rows.length === 0) return;
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      );
      expect(await approving).not.toBe("approved");

      server = await startServerOn(port, env);
      expect(await t.lead.getTask("a")).toMatchObject({ task: { status: TaskProgress.IN_REVIEW } });
      expect((await t.lead.getRequest(signoff.requestId)).status).toBe(RequestStatus.PENDING);
      expect(await readyNotices(t.lead)).toEqual([]);
      expect(
        (await t.alice.readInbox({ afterSeq: 0 })).envelopes.map((e) => e.message?.kind.case),
      ).toEqual(["taskAssign"]);
      expect((await taskEvents(t.lead)).filter((e) => /completed|unblocked/.test(e))).toEqual([]);

      // Approved again, now that nothing holds it: all of it.
      await t.lead.approveSignoff(signoff.requestId, { to: "alice" });
      expect((await t.lead.getTask("a")).task?.status).toBe(TaskProgress.COMPLETED);
      expect(await readyNotices(t.lead)).toEqual(["b", "c"]);
      expect((await t.lead.listTasks({ ready: true })).tasks.map((k) => k.taskId).sort()).toEqual([
        "b",
        "c",
        "x",
      ]);
      expect((await taskEvents(t.lead)).filter((e) => /completed|unblocked/.test(e))).toEqual([
        "a completed",
        "b unblocked",
        "c unblocked",
        "d unblocked",
      ]);
    },
    150_000,
  );

  for (const kind of ["embedded", "postgres"] as const) {
    it.skipIf(kind === "postgres" && !hasPg)(
      `killed during a stream of approvals: each task is completed with its dependents ready and announced, or none of it [${kind}]`,
      async () => {
        let env: Record<string, string>;
        if (kind === "embedded") {
          env = { DATA_DIR: await tempDataDir(), HEARTBEAT_INTERVAL_MS: "200" };
        } else {
          const scratch = await createScratchPgDatabase();
          afterThisTest(() => scratch.drop());
          env = { DATABASE_URL: scratch.url, HEARTBEAT_INTERVAL_MS: "200" };
        }
        const port = await freePort();
        let server: ServerProcess = await startServerOn(port, env);
        afterThisTest(async () => {
          server.child.kill("SIGKILL");
        });
        const t = await newTeam(`http://127.0.0.1:${port}`);
        const N = 16;
        await t.lead.createTask("stays open", { taskId: "open" });
        const signoffs: string[] = [];
        for (let i = 0; i < N; i++) {
          await t.lead.createTask(`do p${i}`, { taskId: `p${i}` });
          await t.lead.createTask(`do q${i}`, { taskId: `q${i}`, blockedBy: [`p${i}`] });
          await t.lead.createTask(`do r${i}`, { taskId: `r${i}`, blockedBy: [`p${i}`, "open"] });
          await t.lead.assignTask(`p${i}`, "alice");
          signoffs.push((await t.alice.requestSignoff(`p${i}`, "done")).requestId);
        }
        // Four approvals at a time; the server is killed once some went through.
        const lead = createTeamClient({
          baseUrl: `http://127.0.0.1:${port}`,
          token: t.leadToken,
          timeoutMs: 3_000,
        });
        let acknowledged = 0;
        const approvals = (async () => {
          for (let i = 0; i < N; i += 4) {
            await Promise.all(
              signoffs.slice(i, i + 4).map((id) =>
                lead
                  .approveSignoff(id, { to: "alice", messageId: "" })
                  .then(() => {
                    acknowledged++;
                  })
                  .catch(() => undefined),
              ),
            );
          }
        })();
        await waitFor("some approvals to go through", 60_000, () =>
          acknowledged >= 5 ? true : undefined,
        );
        server.child.kill("SIGKILL");
        await server.exited;
        await approvals;
        server = await startServerOn(port, env);

        const notices = await readyNotices(t.lead);
        const events = await taskEvents(t.lead);
        const answers = (await t.alice.readInbox({ afterSeq: 0, limit: 1000 })).envelopes.filter(
          (e) => e.message?.kind.case === "resultSignoffResponse",
        );
        let completed = 0;
        for (let i = 0; i < N; i++) {
          const p = (await t.lead.getTask(`p${i}`)).task;
          const request = await t.lead.getRequest(signoffs[i] ?? "");
          const done = p?.status === TaskProgress.COMPLETED;
          if (done) completed++;
          const all = {
            task: done,
            request: request.status === RequestStatus.APPROVED,
            answer: answers.filter((e) => e.requestId === signoffs[i]).length === 1,
            announced: notices.filter((id) => id === `q${i}`).length === 1,
            completedEvent: events.includes(`p${i} completed`),
            unblockedEvents:
              events.includes(`q${i} unblocked`) && events.includes(`r${i} unblocked`),
            ready: (await t.lead.getTask(`q${i}`)).task?.ready === true,
          };
          const none = Object.fromEntries(Object.keys(all).map((k) => [k, false]));
          const every = Object.fromEntries(Object.keys(all).map((k) => [k, true]));
          expect(all, `p${i}`).toEqual(done ? every : none);
          // A task that still waits on "open" is never announced.
          expect(notices).not.toContain(`r${i}`);
        }
        expect(completed).toBeGreaterThanOrEqual(5);
        expect(notices).toHaveLength(completed);
      },
      180_000,
    );
  }
});
