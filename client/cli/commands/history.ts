import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describeEnvelope } from "@team-protocols/client/describe.js";
import {
  GetThreadResponseSchema,
  SearchMessagesResponseSchema,
} from "@team-protocols/contract/team/v1/history_pb.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import { type Command, InvalidArgumentError } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  wholeNumber,
} from "../context.js";

interface SearchFlags extends ConnectionOptions {
  from?: string;
  to?: string;
  kind?: string;
  since?: Date;
  until?: Date;
  limit?: number;
  pageToken?: string;
}

/** An ISO time option, e.g. --since 2026-12-04T10:00:00Z. */
function isoTime(value: string): Date {
  const t = new Date(value);
  if (Number.isNaN(t.getTime())) throw new InvalidArgumentError("not an ISO time");
  return t;
}

/** A message as a line, with its id and what it replied to (its thread is the caller's). */
const line = (e: Envelope | undefined) =>
  e ? `${describeEnvelope(e)}  [${e.id}${e.replyTo ? ` ↩ ${e.replyTo}` : ""}]` : "";

/** search and thread: the team's history (docs/history.md). */
export function historyCommands(program: Command): void {
  connectionOptions(
    program
      .command("search")
      .description(
        'full-text search over the messages you may read, best first ("exact phrase", or, -without)',
      )
      .argument("<query...>", "the words (joined with spaces)")
      .option("--from <name>", "only messages from this member")
      .option("--to <name>", 'only messages to this member ("*": broadcasts)')
      .option("--kind <kind>", "only this kind, e.g. text or plan_approval_request")
      .option("--since <time>", "only messages stored at or after (ISO time)", isoTime)
      .option("--until <time>", "only messages stored before (ISO time)", isoTime)
      .option("--limit <n>", "at most this many (default 20)", wholeNumber)
      .option("--page-token <token>", "the next page, from a previous search"),
  ).action(async (words: string[], o: SearchFlags) => {
    const res = await clientFor(o).rpc.searchMessages({
      query: words.join(" "),
      from: o.from ?? "",
      to: o.to ?? "",
      kind: o.kind ?? "",
      ...(o.since ? { since: timestampFromDate(o.since) } : {}),
      ...(o.until ? { until: timestampFromDate(o.until) } : {}),
      pageSize: o.limit ?? 0,
      pageToken: o.pageToken ?? "",
    });
    print(
      o,
      () =>
        [
          ...res.hits.map(
            (h) => `${line(h.envelope)}\n  thread ${h.envelope?.threadId}: ${h.snippet}`,
          ),
          ...(res.hits.length === 0 ? ["nothing found"] : []),
          ...(res.nextPageToken ? [`(more: --page-token ${res.nextPageToken})`] : []),
        ].join("\n"),
      () => asJson(SearchMessagesResponseSchema, res),
    );
  });

  connectionOptions(
    program
      .command("thread")
      .description("one thread's messages you may read, oldest first")
      .argument("<thread-id>", "a message's thread id (from search, or a message)")
      .option("--limit <n>", "at most this many (default 100)", wholeNumber)
      .option("--page-token <token>", "the next page"),
  ).action(
    async (threadId: string, o: ConnectionOptions & { limit?: number; pageToken?: string }) => {
      const res = await clientFor(o).rpc.getThread({
        threadId,
        pageSize: o.limit ?? 0,
        pageToken: o.pageToken ?? "",
      });
      print(
        o,
        () =>
          [
            ...res.envelopes.map(line),
            ...(res.nextPageToken ? [`(more: --page-token ${res.nextPageToken})`] : []),
          ].join("\n"),
        () => asJson(GetThreadResponseSchema, res),
      );
    },
  );
}
