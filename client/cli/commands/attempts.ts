import { instant } from "@team-protocols/client/describe.js";
import { type AttemptOutcomeName, attemptOutcomeNames } from "@team-protocols/client/names.js";
import { AttemptOutcome } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { Attempt } from "@team-protocols/contract/team/v1/records_pb.js";
import { ListAttemptsResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Command, Option } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  table,
  wholeNumber,
} from "../context.js";

interface AttemptsFlags extends ConnectionOptions {
  member?: string;
  outcome?: AttemptOutcomeName;
  request?: string;
  limit?: number;
  pageToken?: string;
}

/** "accepted", or what refused it: the rule (when a rule did) and the code. */
function outcomeOf(a: Attempt): string {
  if (a.outcome === AttemptOutcome.ACCEPTED) return "accepted";
  return `refused: ${a.rule ? `${a.rule} ` : ""}(${a.code})`;
}

/** attempts: the protocol journal. */
export function attemptCommands(program: Command): void {
  connectionOptions(
    program
      .command("attempts")
      .description(
        "the protocol journal, newest first: every protocol step tried, accepted or refused (the lead sees the team's)",
      )
      .option("--member <name>", "only this member's attempts")
      .addOption(
        new Option("--outcome <outcome>", "only accepted or refused ones").choices(
          attemptOutcomeNames,
        ),
      )
      .option("--request <request-id>", "only attempts naming this request")
      .option("--limit <n>", "at most this many (default 50)", wholeNumber)
      .option("--page-token <token>", "the next page, from a previous listing"),
  ).action(async (o: AttemptsFlags) => {
    const page = await clientFor(o).listAttempts({
      ...(o.member ? { member: o.member } : {}),
      ...(o.outcome ? { outcome: o.outcome } : {}),
      ...(o.request ? { requestId: o.request } : {}),
      ...(o.limit !== undefined ? { pageSize: o.limit } : {}),
      ...(o.pageToken ? { pageToken: o.pageToken } : {}),
    });
    print(
      o,
      () =>
        table(
          ["AT", "MEMBER", "ACTION", "TO", "REQUEST", "OUTCOME"],
          page.attempts.map((a) => [
            instant(a.at),
            a.member,
            a.action,
            a.to || "-",
            a.requestId || "-",
            outcomeOf(a),
          ]),
        ) + (page.nextPageToken ? `\n(more: --page-token ${page.nextPageToken})` : ""),
      () => asJson(ListAttemptsResponseSchema, page),
    );
  });
}
