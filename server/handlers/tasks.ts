import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GetTaskResponseSchema,
  ListTasksResponseSchema,
  type TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import { taskStateFromProto } from "../domain/enums.js";
import { seesWholeTeam } from "../domain/roles.js";
import { DomainError, RuleViolationError } from "../errors.js";
import type { Database } from "../store/database.js";
import { findMember } from "../store/members.js";
import { requestsOfTask } from "../store/requests.js";
import { findTask, listTasks, type TaskRow } from "../store/tasks.js";
import { checkedByRules, toRequestRecord, toTask } from "./convert.js";
import { keysetPage, pageSize, pageTokenPosition } from "./page-token.js";

type TasksImpl = Pick<ServiceImpl<typeof TeamService>, "getTask" | "listTasks">;

const PAGE = { page: 50, max: 500 };

/**
 * task-visibility: the lead and observers see every task; a teammate the tasks it holds (or
 * held when they were done) and the unowned ones. Asking for another's task is refused
 * (PermissionDenied, naming the owner) rather than hidden: the owner is no secret in a team
 * (ListMembers, the lead's feed), and the refusal tells an agent why its view is short.
 */
const mayView = (caller: Caller, t: TaskRow) =>
  seesWholeTeam(caller.role) || t.state === "unowned" || t.ownerId === caller.id;

const notVisible = (sentence: string, field: string) =>
  new RuleViolationError("task-visibility", "permission-denied", sentence, field);

/** GetTask, ListTasks. */
export function taskHandlers(deps: { db: Database }): TasksImpl {
  const { db } = deps;
  return {
    async getTask(req, ctx) {
      const caller = requireCaller(ctx.values);
      const task = await findTask(db, caller.teamId, req.taskId);
      if (!task) {
        throw new DomainError(
          "not-found",
          `no task ${JSON.stringify(req.taskId)} in this team: a task is recorded by its first claim or assignment`,
        );
      }
      if (!mayView(caller, task)) {
        throw notVisible(
          `task ${JSON.stringify(task.taskId)} is held by "${task.ownerName}"; a teammate sees its own tasks and unowned ones`,
          "task_id",
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
      let ownerId: number | undefined;
      if (req.owner !== "") {
        if (!seesWholeTeam(caller.role) && req.owner !== caller.name) {
          throw notVisible(
            `a teammate lists its own tasks and unowned ones, not those of "${req.owner}"`,
            "owner",
          );
        }
        const owner = await findMember(db, caller.teamId, req.owner);
        if (!owner) throw new DomainError("not-found", `no member "${req.owner}" in this team`);
        ownerId = owner.id;
      }
      const size = pageSize(req.pageSize, PAGE);
      const rows = await listTasks(db, {
        teamId: caller.teamId,
        ownerId,
        visibleTo: seesWholeTeam(caller.role) ? undefined : caller.id,
        state: state ?? undefined,
        beforeChange: pageTokenPosition(req.pageToken),
        limit: size + 1,
      });
      const { page, nextPageToken } = keysetPage(rows, size, (t) => t.change);
      return create(ListTasksResponseSchema, { tasks: page.map(toTask), nextPageToken });
    },
  };
}
