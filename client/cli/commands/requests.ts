import { describeRequest, instant } from "@team-protocols/client/describe.js";
import {
  type RequestKindName,
  type RequestStatusName,
  requestKindName,
  requestKindNames,
  requestStatusName,
  requestStatusNames,
} from "@team-protocols/client/names.js";
import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import { RequestRecordSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import { ListRequestsResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Command, Option } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  duration,
  EXIT,
  print,
  QuietExit,
  table,
  wholeNumber,
} from "../context.js";

interface ListFlags extends ConnectionOptions {
  status?: RequestStatusName;
  kind?: RequestKindName;
  party?: string;
  limit?: number;
  pageToken?: string;
}

/** requests, request, await, cancel. */
export function requestCommands(program: Command): void {
  connectionOptions(
    program
      .command("requests")
      .description("list protocol requests, newest first (the lead sees the team's)")
      .addOption(new Option("--status <status>", "only in this state").choices(requestStatusNames))
      .addOption(new Option("--kind <kind>", "only of this kind").choices(requestKindNames))
      .option("--party <member>", "only those this member sent or must answer")
      .option("--limit <n>", "at most this many (default 50)", wholeNumber)
      .option("--page-token <token>", "the next page, from a previous --json listing"),
  ).action(async (o: ListFlags) => {
    const page = await clientFor(o).listRequests({
      ...(o.status ? { status: o.status } : {}),
      ...(o.kind ? { kind: o.kind } : {}),
      ...(o.party ? { party: o.party } : {}),
      ...(o.limit !== undefined ? { pageSize: o.limit } : {}),
      ...(o.pageToken ? { pageToken: o.pageToken } : {}),
    });
    print(
      o,
      () =>
        // An empty table is a bare header, which reads like a failure: say it.
        page.requests.length === 0
          ? "no requests"
          : table(
              ["REQUEST", "KIND", "FROM", "TO", "STATUS", "CREATED"],
              page.requests.map((r) => [
                r.requestId,
                requestKindName(r.kind),
                r.from,
                r.to,
                requestStatusName(r.status),
                instant(r.createdAt),
              ]),
            ) + (page.nextPageToken ? `\n(more: --page-token ${page.nextPageToken})` : ""),
      () => asJson(ListRequestsResponseSchema, page),
    );
  });

  connectionOptions(
    program
      .command("request")
      .description("show one request: kind, parties, status, what was asked and answered")
      .argument("<request-id>", "the request"),
  ).action(async (requestId: string, o: ConnectionOptions) => {
    const record = await clientFor(o).getRequest(requestId);
    print(
      o,
      () => describeRequest(record),
      () => asJson(RequestRecordSchema, record),
    );
  });

  connectionOptions(
    program
      .command("await")
      .summary("wait until a request is answered, expires or is canceled")
      .description(
        `wait until a request is answered, expires or is canceled; exit code ${EXIT.stillPending} if it is still pending when --timeout passes`,
      )
      .argument("<request-id>", "the request")
      .addOption(
        new Option("--timeout <duration>", "how long to wait, e.g. 30s or 5m")
          .argParser(duration)
          // Shown as the user would write it, not as the milliseconds it parses to.
          .default(60_000, "60s"),
      ),
  ).action(async (requestId: string, o: ConnectionOptions & { timeout: number }) => {
    const record = await clientFor(o).awaitRequest(requestId, { timeoutMs: o.timeout });
    print(
      o,
      () => describeRequest(record),
      () => asJson(RequestRecordSchema, record),
    );
    if (record.status === RequestStatus.PENDING) throw new QuietExit(EXIT.stillPending);
  });

  connectionOptions(
    program
      .command("cancel")
      .description("requester: withdraw a pending request (the addressee is told)")
      .argument("<request-id>", "the request"),
  ).action(async (requestId: string, o: ConnectionOptions) => {
    const record = await clientFor(o).cancelRequest(requestId);
    print(
      o,
      () => describeRequest(record),
      () => asJson(RequestRecordSchema, record),
    );
  });
}
