import { permissionResponseMessage } from "@team-protocols/client/messages.js";
import { type TaskStatusName, taskStatusNames } from "@team-protocols/client/names.js";
import { SendResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
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
  wholeNumber,
} from "../context.js";
import { answerRequest, answerVerb } from "./answer.js";
import { describeSend } from "./messaging.js";

interface NotifyFlags extends ConnectionOptions {
  status: TaskStatusName;
  description?: string;
  summary?: string;
  result?: string;
  error?: string;
  tokens?: number;
  toolUses?: number;
  durationMs?: number;
}

/** shutdown, answer-shutdown, submit-plan, approve, reject, allow, deny, notify-task. */
export function protocolCommands(program: Command): void {
  connectionOptions(
    program
      .command("shutdown")
      .description("lead: ask a teammate to shut down; prints the request id to await")
      .argument("<member>", "the teammate")
      .option("--reason <text>", "why (shown to the teammate)")
      .option(
        "--ttl <duration>",
        "time to answer, e.g. 90s or 5m (default: the server's)",
        duration,
      ),
  ).action(async (member: string, o: ConnectionOptions & { reason?: string; ttl?: number }) => {
    const sent = await clientFor(o).requestShutdown(member, {
      ...(o.reason ? { reason: o.reason } : {}),
      ...(o.ttl !== undefined ? { ttlMs: o.ttl } : {}),
    });
    print(
      o,
      () => describeSend(sent),
      () => asJson(SendResponseSchema, sent),
    );
  });

  connectionOptions(
    program
      .command("answer-shutdown")
      .description(
        "teammate: answer a shutdown request (approving stops you); the same as `team answer`",
      )
      .argument("<request-id>", "the request, from the shutdown_request's envelope")
      .option("--approve", "agree and stop")
      .option("--reject", "keep working (needs --reason)")
      .option("--reason <text>", "why you keep working"),
  ).action(
    async (
      requestId: string,
      o: ConnectionOptions & { approve?: boolean; reject?: boolean; reason?: string },
    ) => {
      if (Boolean(o.approve) === Boolean(o.reject)) {
        throw new UsageError(
          `give exactly one of --approve and --reject (or: ${answerVerb(requestId, true)} | --reject "REASON")`,
        );
      }
      const sent = await answerRequest(
        clientFor(o),
        requestId,
        Boolean(o.approve),
        o.reason ?? "",
        { kinds: ["shutdown"], verb: "team answer-shutdown" },
      );
      print(
        o,
        () => describeSend(sent),
        () => asJson(SendResponseSchema, sent),
      );
    },
  );

  connectionOptions(
    program
      .command("submit-plan")
      .description("teammate: ask the lead to approve a plan; prints the request id to await")
      .argument("[plan...]", "the plan (words are joined with spaces)")
      .option("--file <path>", 'read the plan from a file ("-": standard input)')
      .option("--ttl <duration>", "time to answer, e.g. 10m (default: the server's)", duration),
  ).action(async (words: string[], o: ConnectionOptions & { file?: string; ttl?: number }) => {
    if (words.length > 0 && o.file) throw new UsageError("give the plan or --file, not both");
    const plan = o.file ? await readInput(o.file) : words.join(" ");
    const sent = await clientFor(o).submitPlan(plan, o.ttl !== undefined ? { ttlMs: o.ttl } : {});
    print(
      o,
      () => describeSend(sent),
      () => asJson(SendResponseSchema, sent),
    );
  });

  for (const verdict of ["approve", "reject"] as const) {
    connectionOptions(
      program
        .command(verdict)
        .description(
          verdict === "approve"
            ? "lead: approve a plan (the teammate inherits your permission mode); `team answer --approve` answers any kind"
            : 'lead: reject a plan (blank feedback: "Plan needs revision"); `team answer --reject` answers any kind',
        )
        .argument("<request-id>", "the plan_approval_request's request id")
        .option("--feedback <text>", "comments for the teammate"),
    ).action(async (requestId: string, o: ConnectionOptions & { feedback?: string }) => {
      const sent = await answerRequest(
        clientFor(o),
        requestId,
        verdict === "approve",
        o.feedback ?? "",
        { kinds: ["plan_approval"], verb: `team ${verdict}` },
      );
      print(
        o,
        () => describeSend(sent),
        () => asJson(SendResponseSchema, sent),
      );
    });
  }

  for (const verdict of ["allow", "deny"] as const) {
    connectionOptions(
      program
        .command(verdict)
        .description(
          verdict === "allow"
            ? "lead or approver: allow a teammate's permission request (one tool use)"
            : "lead or approver: deny a teammate's permission request (needs --reason)",
        )
        .argument("<request-id>", "the permission_request's request id")
        .option("--reason <text>", "why not (told to the teammate)"),
    ).action(async (requestId: string, o: ConnectionOptions & { reason?: string }) => {
      const client = clientFor(o);
      // The answer goes to whoever asked.
      const record = await client.getRequest(requestId);
      const sent = await client.send(
        record.from,
        permissionResponseMessage(requestId, verdict === "allow", o.reason ?? ""),
      );
      print(
        o,
        () => describeSend(sent),
        () => asJson(SendResponseSchema, sent),
      );
    });
  }

  connectionOptions(
    program
      .command("notify-task")
      .description("tell the lead how a task ended (a <task-notification>)")
      .argument("<task-id>", "the task's id")
      .addOption(
        new Option("--status <status>", "how it ended")
          .choices(taskStatusNames)
          .makeOptionMandatory(),
      )
      .option("--description <text>", 'what the task was (the default summary: Agent "<it>" …)')
      .option(
        "--summary <text>",
        `one line for the lead (default: Agent "<description>" completed, failed: <error>, or was stopped)`,
      )
      .option("--result <text>", "what the lead should read")
      .option("--error <text>", "what went wrong (failed tasks)")
      .option("--tokens <n>", "usage: tokens used", wholeNumber)
      .option("--tool-uses <n>", "usage: tool calls made", wholeNumber)
      .option("--duration-ms <n>", "usage: wall-clock milliseconds", wholeNumber),
  ).action(async (taskId: string, o: NotifyFlags) => {
    const hasUsage = [o.tokens, o.toolUses, o.durationMs].some((v) => v !== undefined);
    const sent = await clientFor(o).notifyTask({
      taskId,
      status: o.status,
      description: o.description ?? "",
      summary: o.summary ?? "",
      result: o.result ?? "",
      error: o.error ?? "",
      ...(hasUsage
        ? {
            usage: {
              totalTokens: o.tokens ?? 0,
              toolUses: o.toolUses ?? 0,
              durationMs: o.durationMs ?? 0,
            },
          }
        : {}),
    });
    print(
      o,
      () => describeSend(sent),
      () => asJson(SendResponseSchema, sent),
    );
  });
}
