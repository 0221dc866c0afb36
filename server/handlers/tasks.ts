import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { TaskProgress } from "@team-protocols/contract/team/v1/enums_pb.js";
import {
  CreateTaskResponseSchema,
  DeleteTaskResponseSchema,
  GetTaskResponseSchema,
  ListTasksResponseSchema,
  type TeamService,
  UpdateTaskResponseSchema,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import { taskProgressFromProto, taskStateFromProto } from "../domain/enums.js";
import { DomainError } from "../errors.js";
import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { createTask, deleteTask, updateTask } from "../protocols/task-list.js";
import { wakeAftermath } from "../protocols/task-ownership.js";
import type { Database } from "../store/database.js";
import { findMember } from "../store/members.js";
import { requestsOfTask } from "../store/requests.js";
import { findTask, listTasks } from "../store/tasks.js";
import { checkedByRules, toRequestRecord, toTask } from "./convert.js";
import { keysetPage, pageSize, pageTokenPosition } from "./page-token.js";

type TasksImpl = Pick<
  ServiceImpl<typeof TeamService>,
  "createTask" | "updateTask" | "deleteTask" | "getTask" | "listTasks"
>;

const PAGE = { page: 50, max: 500 };

/**
 * CreateTask, UpdateTask, DeleteTask (protocols/task-list.ts decides inside one transaction;
 * this wakes the team's watchers, and the inboxes and waiters a deletion touched, after
 * commit), GetTask, ListTasks. The task list is shared: every member reads all of it.
 */
export function taskHandlers(deps: {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  teams: TeamHub;
}): TasksImpl {
  const { db, hub, waiters, teams } = deps;
  return {
    async createTask(req, ctx) {
      const caller = requireCaller(ctx.values);
      const task = await db.transaction((tx) =>
        createTask(tx, caller, {
          taskId: req.taskId === "" ? undefined : req.taskId,
          subject: req.subject.trim(),
          description: req.description,
          activeForm: req.activeForm.trim(),
          blockedBy: req.blockedBy,
        }),
      );
      teams.wake([caller.teamId]);
      return create(CreateTaskResponseSchema, { task: toTask(task) });
    },

    async updateTask(req, ctx) {
      const caller = requireCaller(ctx.values);
      if (req.status === TaskProgress.DELETED) {
        // The rules table let it through only from the lead, with nothing else to change.
        const { task, aftermath } = await db.transaction((tx) =>
          deleteTask(tx, caller, req.taskId),
        );
        teams.wake([caller.teamId]);
        wakeAftermath({ hub, waiters }, aftermath);
        return create(UpdateTaskResponseSchema, { task: toTask(task) });
      }
      const status = checkedByRules(taskProgressFromProto(req.status), "status");
      if (status !== null && status !== "pending" && status !== "in_progress") {
        throw new Error(`status ${status} passed the rules table (signoff-completes)`);
      }
      const task = await db.transaction((tx) =>
        updateTask(tx, caller, {
          taskId: req.taskId,
          subject: req.subject?.trim(),
          description: req.description,
          activeForm: req.activeForm?.trim(),
          addBlockedBy: req.addBlockedBy,
          removeBlockedBy: req.removeBlockedBy,
          addBlocks: req.addBlocks,
          removeBlocks: req.removeBlocks,
          status: status ?? undefined,
        }),
      );
      teams.wake([caller.teamId]);
      return create(UpdateTaskResponseSchema, { task: toTask(task) });
    },

    async deleteTask(req, ctx) {
      const caller = requireCaller(ctx.values);
      const { task, aftermath } = await db.transaction((tx) => deleteTask(tx, caller, req.taskId));
      teams.wake([caller.teamId]);
      wakeAftermath({ hub, waiters }, aftermath);
      return create(DeleteTaskResponseSchema, { task: toTask(task) });
    },

    async getTask(req, ctx) {
      const caller = requireCaller(ctx.values);
      const task = await findTask(db, caller.teamId, req.taskId);
      if (!task) {
        throw new DomainError(
          "not-found",
          `no task ${JSON.stringify(req.taskId)} in this team: CreateTask makes one (a claim or an assignment records one too)`,
        );
      }
      const history = await requestsOfTask(db, caller.teamId, task.taskId);
      return create(GetTaskResponseSchema, {
        task: toTask(task),
        history: history.map(toRequestRecord),
      });
    },

    async listTasks(req, ctx) {
      const caller = requireCaller(ctx.values);
      const state = checkedByRules(taskStateFromProto(req.state), "state");
      const status = checkedByRules(taskProgressFromProto(req.status), "status");
      let ownerId: number | undefined;
      if (req.owner !== "") {
        const owner = await findMember(db, caller.teamId, req.owner);
        if (!owner) throw new DomainError("not-found", `no member "${req.owner}" in this team`);
        ownerId = owner.id;
      }
      const size = pageSize(req.pageSize, PAGE);
      const rows = await listTasks(db, {
        teamId: caller.teamId,
        ownerId,
        state: state ?? undefined,
        status: status ?? undefined,
        ready: req.ready,
        blocked: req.blocked,
        beforeChange: pageTokenPosition(req.pageToken),
        limit: size + 1,
      });
      const { page, nextPageToken } = keysetPage(rows, size, (t) => t.change);
      return create(ListTasksResponseSchema, { tasks: page.map(toTask), nextPageToken });
    },
  };
}
