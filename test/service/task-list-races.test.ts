import { ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { TaskChange, TaskStatus } from "../../gen/team/v1/enums_pb.js";
import { cycleThrough, type TaskEdge } from "../../server/domain/task-graph.js";
import { lockTaskGraph } from "../../server/store/task-dependencies.js";
import { describeEachDatabase, raceTitle, type TeamClient } from "../support/harness.js";
import { assign, createTasks, signoffRequest, signoffResponse } from "../support/task-helpers.js";
import { watch } from "../support/team-watch.js";
import { sleep } from "../support/wait.js";

/** "ok", or the refusal's rule id. */
const outcome = (call: Promise<unknown>) =>
  call.then(
    () => "ok",
    (e) => ConnectError.from(e).rawMessage.split(":")[0] ?? "?",
  );

describeEachDatabase("the task list: concurrent dependency changes", (env, kind) => {
  /** The team's stored edges, and whether any task of them lies on a cycle. */
  async function storedCycle(team: string): Promise<string[] | undefined> {
    const edges = await env().db.query<{ task_id: string; blocked_by: string }>(
      `SELECT d.task_id, d.blocked_by FROM task_dependencies d JOIN teams t ON t.id = d.team_id
       WHERE t.name = $1`,
      [team],
    );
    const list: TaskEdge[] = edges.map((e) => ({ taskId: e.task_id, blockedBy: e.blocked_by }));
    for (const e of list) {
      const cycle = cycleThrough(list, e.taskId);
      if (cycle) return cycle;
    }
    return undefined;
  }

  it(
    raceTitle(
      kind,
      "edges that close a cycle only together, added at once: one refused (no-cycle), none stored as a cycle, 10 rounds",
    ),
    async () => {
      const t = await env().team("alice");
      for (let round = 0; round < 10; round++) {
        const [a, b, c, d] = ["a", "b", "c", "d"].map((x) => `${x}${round}`) as [
          string,
          string,
          string,
          string,
        ];
        // b waits on a, d waits on c: a waiting on d and c waiting on b close a -> d -> c -> b -> a,
        // yet the two calls touch no task row in common.
        await createTasks(t.lead, [[a], [b, a], [c], [d, c]]);
        const results = await Promise.all([
          outcome(t.lead.updateTask({ taskId: a, addBlockedBy: [d] })),
          outcome(t.lead.updateTask({ taskId: c, addBlockedBy: [b] })),
        ]);
        expect(results.sort()).toEqual(["no-cycle", "ok"]);
        expect(await storedCycle(t.name)).toBeUndefined();
      }
    },
  );

  it(
    raceTitle(kind, "two tasks made to wait on each other at once: one refused, 10 rounds"),
    async () => {
      const t = await env().team("alice");
      for (let round = 0; round < 10; round++) {
        const [a, b] = [`p${round}`, `q${round}`];
        await createTasks(t.lead, [[a], [b]]);
        const results = await Promise.all([
          outcome(t.lead.updateTask({ taskId: a, addBlockedBy: [b] })),
          outcome(t.lead.updateTask({ taskId: b, addBlockedBy: [a] })),
        ]);
        expect(results.sort()).toEqual(["no-cycle", "ok"]);
        expect(await storedCycle(t.name)).toBeUndefined();
      }
    },
  );

  it(
    raceTitle(
      kind,
      "a task made to wait on one being completed at that moment: if it waited while that one was open, the lead is told it is ready, 10 rounds",
    ),
    async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      for (let round = 0; round < 10; round++) {
        const x = `x${round}`;
        // Several tasks made to wait at once, around the approval, to widen the window.
        const late = Array.from({ length: 6 }, (_, i) => `late${round}.${i}`);
        await createTasks(t.lead, [[x], ...late.map((id) => [id] as [string])]);
        await t.lead.send({ to: "alice", message: assign(x) });
        const s = await alice.send({ to: "team-lead", message: signoffRequest(x) });
        const added = await Promise.all([
          ...late.slice(0, 3).map((id) => t.lead.updateTask({ taskId: id, addBlockedBy: [x] })),
          t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) }),
          ...late.slice(3).map((id) => t.lead.updateTask({ taskId: id, addBlockedBy: [x] })),
        ]);
        const notices = await readyNotices(t.lead);
        for (const r of added) {
          if (!("task" in r) || !r.task) continue;
          // The edge was stored while x was open: x's completion must have seen it.
          if (r.task.openBlockers.includes(x)) {
            expect(notices, `round ${round}: ${r.task.taskId}`).toContain(r.task.taskId);
          }
          expect((await t.lead.getTask({ taskId: r.task.taskId })).task?.ready).toBe(true);
        }
      }
    },
  );

  it.skipIf(kind !== "postgres")(
    "a dependency change of the team in progress (its task-graph lock held): CreateTask with blocked_by waits until it commits; one without dependencies does not [postgres]",
    async () => {
      // A completion, a deletion or a dependency change holds the team's task graph until it
      // commits (store/task-dependencies.ts). Held here from another connection, as one of
      // them would: a CreateTask that waits on a task must wait too, or it could store an
      // edge the completion never sees (its dependent then never announced as ready).
      const t = await env().team("alice");
      await createTasks(t.lead, [["x"]]);
      const [team] = await env().db.query<{ id: number }>("SELECT id FROM teams WHERE name = $1", [
        t.name,
      ]);
      let release = () => {};
      const released = new Promise<void>((r) => {
        release = r;
      });
      let holding = () => {};
      const held = new Promise<void>((r) => {
        holding = r;
      });
      const holder = env().db.transaction(async (tx) => {
        await lockTaskGraph(tx, team?.id ?? 0);
        holding();
        await released;
      });
      await held;
      let done = false;
      const creating = t.lead
        .createTask({ taskId: "y", subject: "y", blockedBy: ["x"] })
        .finally(() => {
          done = true;
        });
      // A task without dependencies does not touch the graph: it is not held up.
      await t.lead.createTask({ taskId: "free", subject: "free" });
      await sleep(300);
      expect(done, "CreateTask with blocked_by went ahead while the graph was held").toBe(false);
      release();
      await holder;
      expect((await creating).task?.blockedBy).toEqual(["x"]);
    },
  );

  it(
    raceTitle(
      kind,
      "a task created waiting on one being completed at that moment: if it was made while that one was open, the lead is told it is ready, 10 rounds",
    ),
    async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      for (let round = 0; round < 10; round++) {
        const x = `cx${round}`;
        const late = Array.from({ length: 6 }, (_, i) => `clate${round}.${i}`);
        await createTasks(t.lead, [[x]]);
        await t.lead.send({ to: "alice", message: assign(x) });
        const s = await alice.send({ to: "team-lead", message: signoffRequest(x) });
        // CreateTask with blocked_by takes the task-graph lock, as the completion does: the
        // completion then sees each new edge, or the new task sees x completed.
        const made = await Promise.all([
          ...late
            .slice(0, 3)
            .map((id) => t.lead.createTask({ taskId: id, subject: id, blockedBy: [x] })),
          t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) }),
          ...late
            .slice(3)
            .map((id) => t.lead.createTask({ taskId: id, subject: id, blockedBy: [x] })),
        ]);
        const notices = await readyNotices(t.lead);
        for (const r of made) {
          if (!("task" in r) || !r.task) continue;
          if (r.task.openBlockers.includes(x)) {
            expect(notices, `round ${round}: ${r.task.taskId}`).toContain(r.task.taskId);
          }
          expect((await t.lead.getTask({ taskId: r.task.taskId })).task?.ready).toBe(true);
        }
      }
    },
  );

  it(
    raceTitle(
      kind,
      "a waiting task edited while its blocker is completed: its last event shows it as it is stored, 10 rounds",
    ),
    async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const w = watch(t.lead);
      for (let round = 0; round < 10; round++) {
        const [x, z] = [`x${round}`, `z${round}`];
        await createTasks(t.lead, [[x], [z, x]]);
        await t.lead.send({ to: "alice", message: assign(x) });
        const s = await alice.send({ to: "team-lead", message: signoffRequest(x) });
        await Promise.all([
          t.lead.updateTask({ taskId: z, description: `edited in round ${round}` }),
          t.lead.send({ to: "alice", message: signoffResponse(s.requestId, true) }),
        ]);
        const stored = (await t.lead.getTask({ taskId: z })).task;
        await w.until(
          `z${round}'s two changes`,
          (x2) =>
            x2
              .events()
              .some(
                (e) =>
                  e.change.case === "task" &&
                  e.change.value.task?.taskId === z &&
                  e.change.value.change === TaskChange.UNBLOCKED,
              ) &&
            x2
              .events()
              .some(
                (e) =>
                  e.change.case === "task" &&
                  e.change.value.task?.taskId === z &&
                  e.change.value.change === TaskChange.UPDATED,
              ),
        );
        const last = w
          .events()
          .filter((e) => e.change.case === "task" && e.change.value.task?.taskId === z)
          .at(-1);
        const snapshot = last?.change.case === "task" ? last.change.value.task : undefined;
        expect(
          [snapshot?.description, snapshot?.ready, snapshot?.openBlockers],
          `round ${round}`,
        ).toEqual([stored?.description, stored?.ready, stored?.openBlockers]);
      }
      w.stop();
    },
  );
});

/** The READY notices the server wrote to a member's inbox: the ids of the tasks. */
async function readyNotices(client: TeamClient): Promise<string[]> {
  return (await client.readInbox({ afterSeq: 0n, limit: 1000 })).envelopes.flatMap((e) =>
    e.from === "" &&
    e.message?.kind.case === "taskNotification" &&
    e.message.kind.value.status === TaskStatus.READY
      ? [e.message.kind.value.taskId]
      : [],
  );
}
