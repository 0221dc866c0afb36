import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describeEnvelope } from "@team-protocols/client/describe.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import { z } from "zod";
import type { ToolRegistry } from "./tool-registry.js";
import { guarded, ok } from "./tool-result.js";

/**
 * The history tools (docs/history.md): find what was said, and read a conversation whole.
 * What they show is what the member may read anyway: a teammate its own inbox and what it
 * sent, the lead and observers the team.
 */
export function registerHistoryTools(server: ToolRegistry, ctx: { client: TeamClient }): void {
  const { client } = ctx;

  server.registerTool(
    "search_messages",
    {
      description:
        "Full-text search over the messages you may read (a teammate: what it received or " +
        "sent; the lead: the team's), best match first. `query` reads like a web search: " +
        '`parser bug` (both words), `"exact phrase"`, `lexer or parser`, `-flaky` (without). ' +
        "Narrow it by `from`, `to`, `kind` (text, shutdown_request, plan_approval_request, ...) " +
        "and `since` / `until` (ISO times). Each hit names its thread: get_thread reads it whole.",
      inputSchema: {
        query: z.string().min(1).describe("The words to find (at most 1024 bytes)."),
        from: z.string().optional().describe("Only messages from this member."),
        to: z.string().optional().describe('Only messages to this member ("*": broadcasts).'),
        kind: z.string().optional().describe("Only this message kind, e.g. text."),
        since: z.string().datetime().optional().describe("Only messages stored at or after."),
        until: z.string().datetime().optional().describe("Only messages stored before."),
        page_token: z.string().optional().describe("next_page_token of a previous call."),
      },
    },
    (a) =>
      guarded(async () => {
        const res = await client.rpc.searchMessages({
          query: a.query,
          from: a.from ?? "",
          to: a.to ?? "",
          kind: a.kind ?? "",
          ...(a.since ? { since: timestampFromDate(new Date(a.since)) } : {}),
          ...(a.until ? { until: timestampFromDate(new Date(a.until)) } : {}),
          pageToken: a.page_token ?? "",
        });
        const lines = res.hits.map(
          (h) => `${line(h.envelope)}\n  thread ${h.envelope?.threadId}: ${h.snippet}`,
        );
        const more = res.nextPageToken ? `\nMore: page_token "${res.nextPageToken}".` : "";
        return ok(
          res.hits.length === 0
            ? `Nothing found for ${JSON.stringify(a.query)}.`
            : `${res.hits.length} found:\n${lines.join("\n")}${more}`,
          {
            hits: res.hits.map((h) => ({ ...envelopeJson(h.envelope), snippet: h.snippet })),
            next_page_token: res.nextPageToken,
          },
        );
      }),
  );

  server.registerTool(
    "get_thread",
    {
      description:
        "A conversation whole, oldest first: the messages of one thread you may read. A " +
        "thread is a message and its replies (send_message with reply_to), or a protocol " +
        "request with its answer and updates. `thread_id` comes from a message, a search hit, " +
        "or list_threads.",
      inputSchema: {
        thread_id: z.string().min(1).describe("The thread's id."),
        page_token: z.string().optional().describe("next_page_token of a previous call."),
      },
    },
    (a) =>
      guarded(async () => {
        const res = await client.rpc.getThread({
          threadId: a.thread_id,
          pageToken: a.page_token ?? "",
        });
        const more = res.nextPageToken ? `\nMore: page_token "${res.nextPageToken}".` : "";
        return ok(
          `Thread ${a.thread_id}, ${res.envelopes.length} messages:\n${res.envelopes.map(line).join("\n")}${more}`,
          { envelopes: res.envelopes.map(envelopeJson), next_page_token: res.nextPageToken },
        );
      }),
  );
}

/** One message as a line: the CLI's wording, with its id and what it replied to. */
function line(e: Envelope | undefined): string {
  if (!e) return "";
  return `${describeEnvelope(e)}  [id ${e.id}${e.replyTo ? `, reply to ${e.replyTo}` : ""}]`;
}

function envelopeJson(e: Envelope | undefined): Record<string, unknown> {
  return {
    id: e?.id ?? "",
    thread_id: e?.threadId ?? "",
    reply_to: e?.replyTo ?? "",
    from: e?.from ?? "",
    to: e?.to ?? "",
    text: e ? describeEnvelope(e) : "",
  };
}
