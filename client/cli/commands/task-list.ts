import { describeTask, instant } from "@team-protocols/client/describe.js";
import {
  type TaskProgressName,
  type TaskStateName,
  taskProgressName,
  taskProgressNames,
  taskStateNames,
} from "@team-protocols/client/names.js";
import { TaskSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import { ListTasksResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Command, Option } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  readInput,
  table,
  UsageError,
  wholeNumber,
} from "../context.js";

interface ListFlags extends ConnectionOptions {
  owner?: string;
  state?: TaskStateName;
  status?: TaskProgressName;
  ready?: boolean;
  blocked?: boolean;
  limit?: number;
  pageToken?: string;
}

interface UpdateFlags extends ConnectionOptions {
  subject?: string;
  description?: string;
  file?: string;
  activeForm?: string;
  addBlockedBy?: string[];
  removeBlockedBy?: string[];
  addBlocks?: string[];
  removeBlocks?: string[];
  status?: TaskProgressName;
}

/** "a,b c" and repeated flags: the ids, in order. */
const ids = (value: string, previous: string[] = []) => [
  ...previous,
  ...value.split(/[,\s]+/).filter((id) => id !== ""),
];

/** The description from --description or --file ("-": standard input); not both. */
async function description(o: { description?: string; file?: string }) {
  if (o.description !== undefined && o.file !== undefined) {
    throw new UsageError("give --description or --file, not both");
  }
  return o.file !== undefined ? readInput(o.file) : o.description;
}

/** `team task create|update|delete|list`: the team's shared task list. */
export function taskListCommands(task: Command): void {
  connectionOptions(
    task
      .command("create")
      .description("add a task to the team's list (any member but an observer); prints its id")
      .argument("<subject...>", "what to do, in one line (words are joined with spaces)")
      .option("--id <task-id>", "the task's id (default: the team's next free number)")
      .option("--description <text>", "the details")
      .option("--file <path>", 'read the description from a file ("-": standard input)')
      .option("--active-form <text>", 'what the owner shows while on it, e.g. "Running the tests"')
      .option("--blocked-by <ids>", "tasks it waits on (comma-separated, or repeated)", ids),
  ).action(async (words: string[], o: UpdateFlags & { id?: string; blockedBy?: string[] }) => {
    const details = await description(o);
    const created = await clientFor(o).createTask(words.join(" "), {
      ...(o.id !== undefined ? { taskId: o.id } : {}),
      ...(details !== undefined ? { description: details } : {}),
      ...(o.activeForm !== undefined ? { activeForm: o.activeForm } : {}),
      ...(o.blockedBy ? { blockedBy: o.blockedBy } : {}),
    });
    print(
      o,
      () =>
        `created task ${created.taskId}${created.openBlockers.length > 0 ? ` (blocked by ${created.openBlockers.join(", ")})` : " (ready)"}`,
      () => asJson(TaskSchema, created),
    );
  });

  connectionOptions(
    task
      .command("update")
      .description(
        "change a task: the lead anything; its owner its own text and status (pending, in_progress)",
      )
      .argument("<task-id>", "the task")
      .option("--subject <text>", "a new subject")
      .option("--description <text>", "a new description")
      .option("--file <path>", 'read the new description from a file ("-": standard input)')
      .option("--active-form <text>", "a new active form")
      .option("--add-blocked-by <ids>", "lead: tasks it will wait on", ids)
      .option("--remove-blocked-by <ids>", "lead: tasks it no longer waits on", ids)
      .option("--add-blocks <ids>", "lead: tasks that will wait on it", ids)
      .option("--remove-blocks <ids>", "lead: tasks that no longer wait on it", ids)
      .addOption(
        new Option(
          "--status <status>",
          "pending or in_progress (the owner), deleted (the lead); completed comes from a sign-off",
        ).choices(taskProgressNames),
      ),
  ).action(async (taskId: string, o: UpdateFlags) => {
    const details = await description(o);
    const changed = await clientFor(o).updateTask(taskId, {
      ...(o.subject !== undefined ? { subject: o.subject } : {}),
      ...(details !== undefined ? { description: details } : {}),
      ...(o.activeForm !== undefined ? { activeForm: o.activeForm } : {}),
      ...(o.addBlockedBy ? { addBlockedBy: o.addBlockedBy } : {}),
      ...(o.removeBlockedBy ? { removeBlockedBy: o.removeBlockedBy } : {}),
      ...(o.addBlocks ? { addBlocks: o.addBlocks } : {}),
      ...(o.removeBlocks ? { removeBlocks: o.removeBlocks } : {}),
      ...(o.status ? { status: o.status } : {}),
    });
    print(
      o,
      () => describeTask(changed),
      () => asJson(TaskSchema, changed),
    );
  });

  connectionOptions(
    task
      .command("delete")
      .description("lead: delete a task; the tasks that waited only on it become ready")
      .argument("<task-id>", "the task"),
  ).action(async (taskId: string, o: ConnectionOptions) => {
    const deleted = await clientFor(o).deleteTask(taskId);
    print(
      o,
      () => `deleted task ${deleted.taskId}`,
      () => asJson(TaskSchema, deleted),
    );
  });

  connectionOptions(
    task
      .command("list")
      .description(
        "the team's task list, most recently changed first (deleted ones only with --status deleted)",
      )
      .option(
        "--ready",
        "only tasks that may be claimed now (unowned, pending, nothing open blocking them)",
      )
      .option("--blocked", "only tasks waiting on an unfinished task")
      .addOption(new Option("--status <status>", "only this status").choices(taskProgressNames))
      .option("--owner <member>", "only tasks this member holds (or held when completed)")
      .addOption(new Option("--state <state>", "only in this state").choices(taskStateNames))
      .option("--limit <n>", "at most this many (default 50)", wholeNumber)
      .option("--page-token <token>", "the next page, from a previous --json listing"),
  ).action(async (o: ListFlags) => {
    if (o.ready && o.blocked) throw new UsageError("give --ready or --blocked, not both");
    const page = await clientFor(o).listTasks({
      ...(o.owner ? { owner: o.owner } : {}),
      ...(o.state ? { state: o.state } : {}),
      ...(o.status ? { status: o.status } : {}),
      ...(o.ready ? { ready: true } : {}),
      ...(o.blocked ? { blocked: true } : {}),
      ...(o.limit !== undefined ? { pageSize: o.limit } : {}),
      ...(o.pageToken ? { pageToken: o.pageToken } : {}),
    });
    print(
      o,
      () =>
        page.tasks.length === 0
          ? "no tasks"
          : table(
              ["TASK", "STATUS", "OWNER", "WAITS ON", "UPDATED", "SUBJECT"],
              page.tasks.map((t) => [
                t.taskId,
                `${taskProgressName(t.status)}${t.ready ? " (ready)" : ""}`,
                t.owner || "-",
                t.openBlockers.join(",") || "-",
                instant(t.updatedAt),
                t.subject,
              ]),
            ) + (page.nextPageToken ? `\n(more: --page-token ${page.nextPageToken})` : ""),
      () => asJson(ListTasksResponseSchema, page),
    );
  });
}
