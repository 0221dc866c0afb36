import { answerMessage } from "@team-protocols/client/messages.js";
import { requestKindName } from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { SendResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { Command } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  UsageError,
} from "../context.js";
import { describeSend } from "./messaging.js";

interface AnswerOptions extends ConnectionOptions {
  approve?: boolean;
  reject?: string;
  feedback?: string;
}

/** The one way to spell an answer, which the older verbs' refusals point to. */
export const answerVerb = (requestId: string, approve: boolean) =>
  `team answer ${requestId} ${approve ? "--approve" : '--reject "REASON"'}`;

/**
 * `team answer REQUEST_ID --approve | --reject REASON`: one verb for every kind of request
 * (shutdown, plan, task claim, handoff, sign-off). The request's kind decides the answer's
 * case, and the answer goes to whoever asked.
 */
export function answerCommand(program: Command): void {
  connectionOptions(
    program
      .command("answer")
      .description(
        "answer a request of any kind addressed to you: a shutdown, a plan, a task claim, a handoff or a sign-off",
      )
      .argument("<request-id>", "the request (req_…), from its message or `team requests`")
      .option("--approve", "approve (a handoff: accept; a shutdown: agree and stop)")
      .option("--reject <reason>", "reject, saying why (the feedback of a plan or a sign-off)")
      .option("--feedback <text>", "with --approve: comments for a plan or a sign-off"),
  ).action(async (requestId: string, o: AnswerOptions) => {
    if (Boolean(o.approve) === (o.reject !== undefined))
      throw new UsageError(`give exactly one of --approve and --reject REASON`);
    if (o.reject !== undefined && o.feedback !== undefined)
      throw new UsageError("--feedback goes with --approve; with --reject the reason is the text");
    const approve = Boolean(o.approve);
    const sent = await answerRequest(clientFor(o), requestId, approve, o.reject ?? o.feedback);
    print(
      o,
      () => describeSend(sent),
      () => asJson(SendResponseSchema, sent),
    );
  });
}

/** Looks the request up, builds the answer its kind takes, sends it to the requester. */
export async function answerRequest(
  client: TeamClient,
  requestId: string,
  approve: boolean,
  words = "",
  expected?: { kinds: string[]; verb: string },
) {
  const record = await client.getRequest(requestId);
  const kind = requestKindName(record.kind);
  if (expected && !expected.kinds.includes(kind))
    throw new UsageError(
      `${requestId} is a ${kind} request, which \`${expected.verb}\` does not answer: use \`${answerVerb(requestId, approve)}\``,
    );
  const message = answerMessage(record.kind, requestId, approve, words);
  if (!message) throw new UsageError(`a ${kind} request takes no answer`);
  return client.send(record.from, message);
}
