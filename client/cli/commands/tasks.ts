import { describeTask } from "@team-protocols/client/describe.js";
import { answerMessage } from "@team-protocols/client/messages.js";
import { requestKindName } from "@team-protocols/client/names.js";
import {
  GetTaskResponseSchema,
  type SendResponse,
  SendResponseSchema,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Command, Option } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  duration,
  print,
  readInput,
  UsageError,
} from "../context.js";
import { describeSend } from "./messaging.js";
import { taskListCommands } from "./task-list.js";

interface AnswerFlags extends ConnectionOptions {
  approve?: boolean;
  reject?: boolean;
  reason?: string;
  feedback?: string;
}

const ttlOption = () =>
  new Option(
    "--ttl <duration>",
    "time to answer, e.g. 90s or 10m (default: the server's)",
  ).argParser(duration);

const printSend = (o: ConnectionOptions, sent: SendResponse) =>
  print(
    o,
    () => describeSend(sent),
    () => asJson(SendResponseSchema, sent),
  );

const ttl = (o: { ttl?: number }) => (o.ttl !== undefined ? { ttlMs: o.ttl } : {});

/**
 * `team task claim|assign|handoff|signoff|answer|get`: the task protocols; and (task-list.ts)
 * `create|update|delete|list`: the team's shared task list.
 */
export function taskCommands(program: Command): void {
  const task = program
    .command("task")
    .description(
      "tasks: create, change, list and show them; claim, assign, hand off, sign off, answer",
    );

  connectionOptions(
    task
      .command("claim")
      .description("teammate: ask the lead to make you the task's owner; prints the request id")
      .argument("<task-id>", "the task, as the team names it")
      .option("--note <text>", "why you, or how you will go about it")
      .addOption(ttlOption()),
  ).action(async (taskId: string, o: ConnectionOptions & { note?: string; ttl?: number }) => {
    printSend(o, await clientFor(o).claimTask(taskId, { note: o.note ?? "", ...ttl(o) }));
  });

  connectionOptions(
    task
      .command("assign")
      .description("lead: give a task to a teammate directly (it needs no answer)")
      .argument("<task-id>", "the task")
      .argument("<member>", "the teammate who owns it from now on")
      .option("--note <text>", "what you want done"),
  ).action(async (taskId: string, member: string, o: ConnectionOptions & { note?: string }) => {
    printSend(o, await clientFor(o).assignTask(taskId, member, { note: o.note ?? "" }));
  });

  connectionOptions(
    task
      .command("handoff")
      .description("owner: ask another teammate to take the task over, or the lead to take it back")
      .argument("<task-id>", "the task you own")
      .argument("<member>", "the teammate (or the lead)")
      .requiredOption("--note <text>", "where the work stands, for the next owner")
      .addOption(ttlOption()),
  ).action(
    async (
      taskId: string,
      member: string,
      o: ConnectionOptions & { note: string; ttl?: number },
    ) => {
      printSend(o, await clientFor(o).handOffTask(taskId, member, o.note, ttl(o)));
    },
  );

  connectionOptions(
    task
      .command("signoff")
      .description("owner: ask the lead to sign off the task's result; prints the request id")
      .argument("<task-id>", "the task you own")
      .argument("[result...]", "the result (words are joined with spaces)")
      .option("--file <path>", 'read the result from a file ("-": standard input)')
      .option("--summary <text>", "one line for the lead")
      .addOption(ttlOption()),
  ).action(
    async (
      taskId: string,
      words: string[],
      o: ConnectionOptions & { file?: string; summary?: string; ttl?: number },
    ) => {
      if (words.length > 0 && o.file) throw new UsageError("give the result or --file, not both");
      const result = o.file ? await readInput(o.file) : words.join(" ");
      printSend(
        o,
        await clientFor(o).requestSignoff(taskId, result, { summary: o.summary ?? "", ...ttl(o) }),
      );
    },
  );

  connectionOptions(
    task
      .command("answer")
      .description(
        "answer a task claim (lead), a handoff (its addressee) or a sign-off (lead); the answer goes to whoever asked",
      )
      .argument("<request-id>", "the request, from its envelope")
      .option("--approve", "approve the claim or sign-off, accept the handoff")
      .option("--reject", "reject (needs --reason, or --feedback for a sign-off)")
      .option("--reason <text>", "why not (a claim or a handoff)")
      .option("--feedback <text>", "what to change (a sign-off)"),
  ).action(async (requestId: string, o: AnswerFlags) => {
    if (Boolean(o.approve) === Boolean(o.reject)) {
      throw new UsageError("give exactly one of --approve and --reject");
    }
    if (o.reason !== undefined && o.feedback !== undefined) {
      throw new UsageError("give --reason or --feedback, not both");
    }
    const client = clientFor(o);
    // The kind decides the answer's case; the requester is where it goes.
    const record = await client.getRequest(requestId);
    const message = answerMessage(
      record.kind,
      requestId,
      Boolean(o.approve),
      o.reason ?? o.feedback ?? "",
    );
    if (!message) {
      throw new UsageError(`a ${requestKindName(record.kind)} request takes no answer`);
    }
    printSend(o, await client.send(record.from, message));
  });

  connectionOptions(
    task
      .command("get")
      .description("show a task: state, owner, and its history of requests")
      .argument("<task-id>", "the task"),
  ).action(async (taskId: string, o: ConnectionOptions) => {
    const res = await clientFor(o).getTask(taskId);
    print(
      o,
      () => (res.task ? describeTask(res.task, res.history) : `no task ${taskId}`),
      () => asJson(GetTaskResponseSchema, res),
    );
  });

  taskListCommands(task);
}
