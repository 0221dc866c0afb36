import { describeEnvelope } from "@team-protocols/client/describe.js";
import { whoAmI } from "@team-protocols/client/identity.js";
import {
  asksForAnswer,
  createPromptReader,
  type PromptReader,
} from "@team-protocols/client/prompt-reader.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import { EnvelopeSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import {
  ReadInboxResponseSchema,
  type SendResponse,
  SendResponseSchema,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { Command } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  wholeNumber,
} from "../context.js";

interface InboxFlags extends ConnectionOptions {
  follow: boolean;
  ack: boolean;
  after?: number;
  limit?: number;
  count?: number;
  prompt: boolean;
}

/** send, broadcast, inbox. */
export function messagingCommands(program: Command): void {
  connectionOptions(
    program
      .command("send")
      .description("send a text message to a member")
      .argument("<to>", "the member")
      .argument("<text...>", "the message (words are joined with spaces)")
      .option("--message-id <id>", "idempotency key: a retry with it stores nothing new")
      .option("--reply-to <id>", "the id of the message this answers: it joins its thread"),
  ).action(async (to: string, words: string[], o: ConnectionOptions & SendFlags) => {
    const sent = await clientFor(o).sendText(to, words.join(" "), sendOptions(o));
    print(
      o,
      () => describeSend(sent),
      () => asJson(SendResponseSchema, sent),
    );
  });

  connectionOptions(
    program
      .command("broadcast")
      .description('send a text message to every other active member (to "*")')
      .argument("<text...>", "the message (words are joined with spaces)")
      .option("--message-id <id>", "idempotency key: a retry with it stores nothing new")
      .option("--reply-to <id>", "the id of the message this answers: it joins its thread"),
  ).action(async (words: string[], o: ConnectionOptions & SendFlags) => {
    const sent = await clientFor(o).broadcast(words.join(" "), sendOptions(o));
    print(
      o,
      () => describeSend(sent),
      () => asJson(SendResponseSchema, sent),
    );
  });

  connectionOptions(
    program
      .command("inbox")
      .summary("read your inbox, or --follow it live")
      .description(
        "read your inbox (after your ack cursor unless --after); --follow streams it live, " +
          "reconnecting and resuming where it left off, until Ctrl-C or --count",
      )
      .option("-f, --follow", "stream new messages as they arrive", false)
      .option("--ack", "ack what is printed (the next read starts after it)", false)
      .option("--after <seq>", "start after this seq (0: the whole inbox)", wholeNumber)
      .option("--limit <n>", "without --follow: at most this many messages", wholeNumber)
      .option("--count <n>", "with --follow: stop after this many messages", wholeNumber)
      .option("--prompt", "print messages as an LLM agent should read them", false),
  ).action(async (o: InboxFlags) => {
    if (o.follow) return follow(o);
    const client = clientFor(o);
    const read = await client.readInbox({
      ...(o.after !== undefined ? { afterSeq: o.after } : {}),
      ...(o.limit !== undefined ? { limit: o.limit } : {}),
      ack: o.ack,
    });
    // The whole batch is seen before any of it is rendered, so a request settled later in
    // it (or before, by this reader's own answer: looked up) is not offered for an answer.
    const reader = createPromptReader({ answers: "cli", ...(await readerName(client, o)) });
    if (o.prompt && !o.json) {
      for (const e of read.envelopes) reader.observe(e);
      for (const e of read.envelopes) await lookUpRequest(client, reader, e);
    }
    print(
      o,
      () => {
        const shown = read.envelopes.map((e) =>
          o.prompt ? reader.render(e) : describeEnvelope(e),
        );
        const footer = `(${read.envelopes.length} message${read.envelopes.length === 1 ? "" : "s"}; acked through seq ${read.ackedSeq}; last seq ${read.lastSeq})`;
        return [...shown, footer].join(o.prompt ? "\n\n" : "\n");
      },
      () => asJson(ReadInboxResponseSchema, read),
    );
  });
}

/** Who reads, for --prompt (the lead's copy of an approver's answer reads as a copy). */
async function readerName(client: TeamClient, o: InboxFlags): Promise<{ reader?: string }> {
  return o.prompt && !o.json ? { reader: (await whoAmI(client)).name } : {};
}

/** Streams until Ctrl-C (or --count); acks as it goes with --ack. */
async function follow(o: InboxFlags): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const client = clientFor(o);
  const reader = createPromptReader({ answers: "cli", ...(await readerName(client, o)) });
  const inbox = client.inbox({
    ...(o.after !== undefined ? { afterSeq: o.after } : {}),
    // Acked right after printing (below): there is no next turn of the loop after the last.
    autoAck: false,
    signal: stop.signal,
    onStatus(s) {
      if (s.state === "disconnected" && s.error) {
        process.stderr.write(`inbox: ${s.error.message}; reconnecting in ${s.retryInMs} ms\n`);
      }
    },
  });
  let seen = 0;
  try {
    for await (const envelope of inbox) {
      if (o.json) process.stdout.write(`${JSON.stringify(asJson(EnvelopeSchema, envelope))}\n`);
      else if (o.prompt) {
        // A replayed backlog may hold requests answered or canceled since: ask first.
        await lookUpRequest(client, reader, envelope);
        process.stdout.write(`${reader.render(envelope)}\n\n`);
      } else process.stdout.write(`${describeEnvelope(envelope)}\n`);
      seen++;
      if (o.ack) inbox.ack(envelope);
      if (o.count !== undefined && seen >= o.count) break;
    }
    await inbox.flush();
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

const messageId = (o: { messageId?: string }) => (o.messageId ? { messageId: o.messageId } : {});

interface SendFlags {
  messageId?: string;
  replyTo?: string;
}
const sendOptions = (o: SendFlags) => ({
  ...messageId(o),
  ...(o.replyTo ? { replyTo: o.replyTo } : {}),
});

export function describeSend(sent: SendResponse): string {
  const where = sent.deliveries.map((d) => `${d.to} (seq ${d.seq})`).join(", ") || "nobody";
  const request = sent.requestId ? `; request ${sent.requestId}` : "";
  return `${sent.replayed ? "already sent (retry)" : "sent"} to ${where}${request}`;
}

/**
 * A request addressed to the reader may have been answered by the reader itself (its answer
 * went to the requester's inbox, not this one): GetRequest tells. A failed look-up leaves
 * the request rendered as pending, which is what the envelope alone says.
 */
async function lookUpRequest(client: TeamClient, reader: PromptReader, e: Envelope) {
  if (!asksForAnswer(e)) return;
  const record = await client.getRequest(e.requestId).catch(() => undefined);
  if (record) reader.known(e.requestId, record.status);
}
