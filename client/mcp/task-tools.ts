import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describeTask } from "@team-protocols/client/describe.js";
import type { Identity } from "@team-protocols/client/identity.js";
import {
  requestKindName,
  requestStatusName,
  taskProgressName,
  taskProgressNames,
  taskStateName,
} from "@team-protocols/client/names.js";
import type { TaskChanges, TeamClient } from "@team-protocols/client/team-client.js";
import type { RequestRecord, Task } from "@team-protocols/contract/team/v1/records_pb.js";
import { z } from "zod";
import type { ToolRegistry } from "./tool-registry.js";
import { guarded, ok, refusal } from "./tool-result.js";

/**
 * The task list's tools. Their inputs take the names Claude Code's own task tools use
 * (TaskCreate, TaskUpdate, TaskGet, TaskList: `taskId`, `subject`, `description`,
 * `activeForm`, `status`, `owner`, `addBlockedBy`, `addBlocks`), so a prompt written for those
 * works here unchanged; but here the server enforces the list. What Claude Code does by
 * writing a field, update_task does through the protocol that field stands for:
 * - `owner` set to yourself on an unowned task: a task_claim_request to the lead (you own it,
 *   in progress, once the lead approves); to another member, of a task you hold: a
 *   task_handoff_request; the lead setting it: a task_assign;
 * - `status: "completed"` by the owner: a result_signoff_request to the lead (the task is
 *   in_review until the lead answers; approved, it is completed); by the lead, of a task in
 *   review: the approval of that sign-off;
 * - `status: "deleted"`: DeleteTask (the lead's).
 * Every refusal is the server's, with its rule id.
 */
export function registerTaskTools(
  server: ToolRegistry,
  ctx: { client: TeamClient; me: Identity },
): void {
  const { client, me } = ctx;
  const writes = me.role !== "observer";

  server.registerTool(
    "create_task",
    {
      listed: writes,
      description:
        "Adds a task to the team's shared task list (Claude Code's TaskCreate): pending and " +
        "unowned, waiting on `blockedBy` (task ids of the team). Returns its id: yours " +
        "(`taskId`) or the next free number. A task waiting on an unfinished task cannot be " +
        "claimed until that one is completed.",
      inputSchema: {
        subject: z.string().describe("What to do, in one line (at most 200 characters)."),
        description: z.string().optional().describe("The details: what done means, where to look."),
        activeForm: z
          .string()
          .optional()
          .describe('What the owner shows while working on it, e.g. "Running the tests".'),
        taskId: z.string().optional().describe("An id of your own; unset: the next free number."),
        blockedBy: z
          .array(z.string())
          .optional()
          .describe("Ids of tasks this one waits on (they must exist)."),
      },
    },
    (a) =>
      guarded(async () => {
        const task = await client.createTask(a.subject, {
          ...(a.taskId !== undefined ? { taskId: a.taskId } : {}),
          ...(a.description !== undefined ? { description: a.description } : {}),
          ...(a.activeForm !== undefined ? { activeForm: a.activeForm } : {}),
          ...(a.blockedBy !== undefined ? { blockedBy: a.blockedBy } : {}),
        });
        return ok(`Created task #${task.taskId}: ${task.subject}${waiting(task)}`, {
          task: taskJson(task),
        });
      }),
  );

  server.registerTool(
    "update_task",
    {
      listed: writes,
      description:
        "Changes a task (Claude Code's TaskUpdate), through the team's protocols: " +
        "`owner` set to yourself claims an unowned task (the lead approves; it is then yours and " +
        "in_progress), set to another member hands off a task you hold (they accept), and the " +
        "lead setting it assigns the task. `status`: pending or in_progress (the owner's own), " +
        "completed (the owner asks the lead to sign off `result`; the task is in_review until " +
        "the lead answers; the lead completing a task in review approves that sign-off), " +
        "deleted (the lead). `subject`, `description`, `activeForm`: the owner's or the lead's; " +
        "`addBlockedBy` / `addBlocks` and their remove twins: the lead's. A dependency that " +
        "would close a cycle, a claim of a blocked task, a completion by hand are refused " +
        "with the rule that says why.",
      inputSchema: {
        taskId: z.string().describe("The task to change."),
        subject: z.string().optional().describe("A new subject."),
        description: z.string().optional().describe("A new description."),
        activeForm: z.string().optional().describe("A new active form."),
        status: z
          .enum(["pending", "in_progress", "completed", "deleted"])
          .optional()
          .describe("The new status (see above for what each does)."),
        owner: z.string().optional().describe("Who should own it (see above)."),
        addBlockedBy: z.array(z.string()).optional().describe("Tasks it will wait on (lead)."),
        addBlocks: z.array(z.string()).optional().describe("Tasks that will wait on it (lead)."),
        removeBlockedBy: z
          .array(z.string())
          .optional()
          .describe("Tasks it no longer waits on (lead)."),
        removeBlocks: z
          .array(z.string())
          .optional()
          .describe("Tasks that no longer wait on it (lead)."),
        result: z
          .string()
          .optional()
          .describe("With status completed: the result the lead signs off."),
      },
    },
    (a) => guarded(() => updateTask(client, me, a)),
  );

  server.registerTool(
    "get_task",
    {
      description:
        "One task (Claude Code's TaskGet): subject, description, status (pending, in_progress, " +
        "in_review, completed, deleted), owner, what it waits on and what waits on it, and its " +
        "history of requests (claims, assignments, handoffs, sign-offs). Any member.",
      inputSchema: {
        taskId: z.string().optional().describe("The task's id."),
        task_id: z.string().optional().describe("The same, as the earlier tool named it."),
      },
    },
    (a) =>
      guarded(async () => {
        const taskId = a.taskId ?? a.task_id;
        if (!taskId) {
          return {
            content: [
              {
                type: "text",
                text: "invalid-input: taskId is required. Nothing was sent; fix the call.",
              },
            ],
            isError: true,
          };
        }
        const res = await client.getTask(taskId);
        const task = res.task;
        if (!task) throw new Error("GetTask answered without a task");
        return ok(describeTask(task, res.history), {
          task: taskJson(task),
          history: res.history.map(historyJson),
        });
      }),
  );

  server.registerTool(
    "list_tasks",
    {
      description:
        "The team's shared task list (Claude Code's TaskList), one line per task: id, status, " +
        "subject, owner, and the open tasks it waits on. `ready`: only tasks you may claim now " +
        "(pending, no owner, nothing open blocking them); prefer the lowest id. `blocked`: " +
        "only tasks still waiting. Any member.",
      inputSchema: {
        ready: z.boolean().optional().describe("Only tasks that may be claimed now."),
        blocked: z.boolean().optional().describe("Only tasks waiting on an unfinished task."),
        status: z.enum(taskProgressNames).optional().describe("Only tasks with this status."),
        owner: z.string().optional().describe("Only tasks this member holds (or completed)."),
      },
    },
    (a) =>
      guarded(async () => {
        const tasks: Task[] = [];
        let pageToken = "";
        do {
          const page = await client.listTasks({
            ...(a.ready ? { ready: true } : {}),
            ...(a.blocked ? { blocked: true } : {}),
            ...(a.status ? { status: a.status } : {}),
            ...(a.owner ? { owner: a.owner } : {}),
            pageSize: 500,
            pageToken,
          });
          tasks.push(...page.tasks);
          pageToken = page.nextPageToken;
        } while (pageToken !== "" && tasks.length < 2000);
        tasks.sort(byId);
        return ok(tasks.map(taskLine).join("\n") || "No tasks.", {
          tasks: tasks.map(taskJson),
        });
      }),
  );
}

type UpdateInput = {
  taskId: string;
  subject?: string | undefined;
  description?: string | undefined;
  activeForm?: string | undefined;
  status?: "pending" | "in_progress" | "completed" | "deleted" | undefined;
  owner?: string | undefined;
  addBlockedBy?: string[] | undefined;
  addBlocks?: string[] | undefined;
  removeBlockedBy?: string[] | undefined;
  removeBlocks?: string[] | undefined;
  result?: string | undefined;
};

/** One step update_task took, for the answer: what, and the request it opened or answered. */
interface Step {
  action: string;
  request_id?: string;
  note: string;
}

/**
 * update_task's steps, in order: the task's own fields and dependencies (one UpdateTask),
 * then ownership (a claim, handoff or assignment), then status. A refusal stops there; the
 * answer says which steps were taken before it.
 */
async function updateTask(client: TeamClient, me: Identity, a: UpdateInput) {
  const steps: Step[] = [];
  const stopped = (err: unknown) => {
    const r = refusal(err);
    const done = steps.map((s) => `- ${s.note}`).join("\n");
    const first = r.content[0];
    const text = first?.type === "text" ? first.text : "refused";
    return {
      ...r,
      content: [
        { type: "text" as const, text: done ? `${text}\nDone before that:\n${done}` : text },
      ],
    } satisfies CallToolResult;
  };
  try {
    const changes: TaskChanges = {
      ...(a.subject !== undefined ? { subject: a.subject } : {}),
      ...(a.description !== undefined ? { description: a.description } : {}),
      ...(a.activeForm !== undefined ? { activeForm: a.activeForm } : {}),
      ...(a.addBlockedBy?.length ? { addBlockedBy: a.addBlockedBy } : {}),
      ...(a.addBlocks?.length ? { addBlocks: a.addBlocks } : {}),
      ...(a.removeBlockedBy?.length ? { removeBlockedBy: a.removeBlockedBy } : {}),
      ...(a.removeBlocks?.length ? { removeBlocks: a.removeBlocks } : {}),
    };
    if (Object.keys(changes).length > 0) {
      await client.updateTask(a.taskId, changes);
      steps.push({ action: "update", note: `changed ${Object.keys(changes).join(", ")}` });
    }
    let claimed = false;
    if (a.owner !== undefined) {
      const before = (await client.getTask(a.taskId)).task;
      const owner = before?.owner ?? "";
      if (a.owner === owner) {
        // Already so: nothing to ask.
      } else if (me.role === "lead") {
        const sent = await client.assignTask(a.taskId, a.owner);
        steps.push({
          action: "assign",
          request_id: sent.requestId,
          note: `assigned it to ${a.owner} (${sent.requestId})`,
        });
      } else if (a.owner === me.name) {
        const sent = await client.claimTask(a.taskId);
        claimed = true;
        steps.push({
          action: "claim",
          request_id: sent.requestId,
          note: `asked ${me.lead} for it (task_claim_request ${sent.requestId}): it is yours, in_progress, once the lead approves`,
        });
      } else {
        const to = a.owner === "" ? me.lead : a.owner;
        const sent = await client.handOffTask(
          a.taskId,
          to,
          `${me.name} hands task #${a.taskId} over (update_task)`,
        );
        steps.push({
          action: "handoff",
          request_id: sent.requestId,
          note: `offered it to ${to} (task_handoff_request ${sent.requestId}): it moves once they accept`,
        });
      }
    }
    if (a.status === "deleted") {
      await client.deleteTask(a.taskId);
      steps.push({ action: "delete", note: "deleted it" });
    } else if (a.status === "completed") {
      steps.push(await complete(client, me, a));
    } else if (a.status !== undefined && !claimed) {
      await client.updateTask(a.taskId, { status: a.status });
      steps.push({ action: "status", note: `set it ${a.status}` });
    } else if (a.status !== undefined) {
      steps.push({
        action: "status",
        note: `status ${a.status} waits for the claim: an approved claim makes it in_progress`,
      });
    }
    if (steps.length === 0) return ok(`Nothing to change for task #${a.taskId}.`, { steps: [] });
    const task = (await client.getTask(a.taskId)).task;
    return ok(
      `Task #${a.taskId}: ${steps.map((s) => s.note).join("; ")}.${task ? `\nNow: ${taskLine(task)}` : ""}`,
      { steps, ...(task ? { task: taskJson(task) } : {}) },
    );
  } catch (err) {
    return stopped(err);
  }
}

/**
 * status completed: the owner asks the lead to sign off its result; the lead approves a
 * sign-off pending for the task. Anything else is left to the server to refuse
 * (signoff-completes).
 */
async function complete(client: TeamClient, me: Identity, a: UpdateInput): Promise<Step> {
  if (me.role === "lead") {
    const { history } = await client.getTask(a.taskId);
    const pending = history.find(
      (r) =>
        requestKindName(r.kind) === "result_signoff" && requestStatusName(r.status) === "pending",
    );
    if (pending) {
      await client.approveSignoff(pending.requestId, { to: pending.from });
      return {
        action: "approve_signoff",
        request_id: pending.requestId,
        note: `approved ${pending.from}'s result (${pending.requestId}): it is completed`,
      };
    }
  } else {
    const task = (await client.getTask(a.taskId)).task;
    if (task?.owner === me.name) {
      const sent = await client.requestSignoff(
        a.taskId,
        a.result ?? `Task #${a.taskId} (${task.subject}) is done.`,
      );
      return {
        action: "request_signoff",
        request_id: sent.requestId,
        note: `asked ${me.lead} to sign off the result (result_signoff_request ${sent.requestId}): it is in_review, and completed once the lead approves`,
      };
    }
  }
  // Nobody completes a task by hand: the server says so (signoff-completes).
  await client.updateTask(a.taskId, { status: "completed" });
  throw new Error("the server completed a task by hand");
}

const byId = (x: Task, y: Task) => {
  const [a, b] = [Number(x.taskId), Number(y.taskId)];
  if (Number.isInteger(a) && Number.isInteger(b)) return a - b;
  return x.taskId < y.taskId ? -1 : x.taskId > y.taskId ? 1 : 0;
};

const waiting = (t: Task) =>
  t.openBlockers.length > 0
    ? ` [blocked by ${t.openBlockers.map((id) => `#${id}`).join(", ")}]`
    : "";

/** Claude Code's TaskList line: "#3 [in_progress] Write the docs (alice) [blocked by #1]". */
function taskLine(t: Task): string {
  return `#${t.taskId} [${taskProgressName(t.status)}] ${t.subject}${t.owner ? ` (${t.owner})` : ""}${waiting(t)}${t.ready ? " ready" : ""}`;
}

/** A task for programs: snake_case keys, enum words. */
function taskJson(t: Task) {
  return {
    id: t.taskId,
    subject: t.subject,
    description: t.description,
    active_form: t.activeForm,
    status: taskProgressName(t.status),
    state: taskStateName(t.state),
    owner: t.owner,
    blocked_by: t.blockedBy,
    open_blockers: t.openBlockers,
    blocks: t.blocks,
    ready: t.ready,
    created_by: t.createdBy,
  };
}

function historyJson(r: RequestRecord) {
  return {
    request_id: r.requestId,
    kind: requestKindName(r.kind),
    from: r.from,
    to: r.to,
    status: requestStatusName(r.status),
  };
}
