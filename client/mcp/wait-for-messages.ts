import { learnStatuses } from "@team-protocols/client/inbox-delivery.js";
import { createPromptReader, type PromptReader } from "@team-protocols/client/prompt-reader.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";

/** Under the tool-call time limits of common MCP clients (some give up at 30 s or 60 s). */
export const DEFAULT_WAIT_SECONDS = 25;
export const MAX_WAIT_SECONDS = 300;

/**
 * What a bridge remembers about one member's inbox between wait_for_messages calls.
 *
 * Delivery is at-least-once. The ack of what a call returned is sent right after the result
 * is handed to the MCP transport, and the next call waits for it first. `returnedSeq` keeps a
 * bridge from returning a message twice even while that ack is in flight. If the bridge dies
 * after returning messages but before their ack reached the server, the next bridge for the
 * member (which starts from the server's ack cursor) returns them again: a model may see the
 * last batch twice across a crash, and never loses one.
 */
export interface InboxCursor {
  returnedSeq: bigint | undefined;
  pendingAck: Promise<void>;
  /** Calls for one member run one at a time, so two never return the same message. */
  queue: Promise<unknown>;
  /** What this member was shown so far: a request settled since reads as settled. */
  reader: PromptReader;
}

/** `reader`: the member's name (an approver's answer copied to the lead reads as a copy). */
export const newInboxCursor = (reader?: string): InboxCursor => ({
  returnedSeq: undefined,
  pendingAck: Promise.resolve(),
  queue: Promise.resolve(),
  reader: createPromptReader(reader ? { reader } : {}),
});

export interface WaitOptions {
  timeoutSeconds: number;
  max: number;
  /** Ends a live wait early (the MCP call was cancelled, its client went away). */
  signal?: AbortSignal | undefined;
}

export interface WaitResult {
  envelopes: Envelope[];
  /** Each envelope as the model reads it (toPromptText, from this member's side). */
  texts: string[];
  text: string;
}

/** The caller's next messages: the backlog at once, else the first live one (or none). */
export function waitForMessages(
  client: TeamClient,
  cursor: InboxCursor,
  options: WaitOptions,
): Promise<WaitResult> {
  const run = cursor.queue.then(() => waitOnce(client, cursor, options));
  cursor.queue = run.catch(() => {});
  return run;
}

async function waitOnce(
  client: TeamClient,
  cursor: InboxCursor,
  { timeoutSeconds, max, signal }: WaitOptions,
): Promise<WaitResult> {
  await cursor.pendingAck;
  const after = cursor.returnedSeq;
  const backlog = await client.readInbox({
    ...(after !== undefined ? { afterSeq: after } : {}),
    limit: max,
  });
  let envelopes = backlog.envelopes;
  if (envelopes.length === 0 && timeoutSeconds > 0) {
    envelopes = await firstLive(client, after ?? backlog.ackedSeq, timeoutSeconds, max, signal);
  }
  // A request answered elsewhere (the lead's console, the CLI) is not asked again.
  await learnStatuses(client, cursor.reader, envelopes);
  const texts = envelopes.map((e) => cursor.reader.render(e));
  const last = envelopes.at(-1);
  if (last) {
    cursor.returnedSeq = last.seq;
    // In the background: the result goes out first (see InboxCursor), the next call waits.
    cursor.pendingAck = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      client.ack(last.seq).then(
        () => {},
        () => {}, // not acked: the server delivers it again to the next bridge; never lost
      ),
    );
  }
  const text =
    envelopes.length === 0
      ? `Nothing yet: no message arrived within ${timeoutSeconds} s. Call wait_for_messages again to keep waiting.`
      : texts.join("\n\n");
  return { envelopes, texts, text };
}

/** Subscribes after `afterSeq` (live delivery, not polling) until a message or the timeout. */
async function firstLive(
  client: TeamClient,
  afterSeq: bigint,
  timeoutSeconds: number,
  max: number,
  cancel: AbortSignal | undefined,
): Promise<Envelope[]> {
  const stop = new AbortController();
  if (cancel?.aborted) return [];
  cancel?.addEventListener("abort", () => stop.abort(), { once: true });
  const timer = setTimeout(() => stop.abort(), timeoutSeconds * 1000);
  const inbox = client.inbox({ afterSeq, autoAck: false, signal: stop.signal });
  const found: Envelope[] = [];
  try {
    for await (const envelope of inbox) {
      found.push(envelope);
      break;
    }
  } finally {
    clearTimeout(timer);
    await inbox.close();
  }
  const first = found[0];
  if (first && max > 1) {
    // Whatever else arrived with it, in the same result.
    const more = await client.readInbox({ afterSeq: first.seq, limit: max - 1 });
    found.push(...more.envelopes);
  }
  return found;
}
