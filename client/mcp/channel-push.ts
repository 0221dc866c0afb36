import { learnStatuses } from "@team-protocols/client/inbox-delivery.js";
import { createPromptReader } from "@team-protocols/client/prompt-reader.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import type { InboxCursor } from "./wait-for-messages.js";

/** Claude Code's channel event (its "Channels reference"): content, and meta as attributes. */
export const CHANNEL_METHOD = "notifications/claude/channel";

export interface ChannelEvent {
  method: typeof CHANNEL_METHOD;
  params: { content: string; meta: Record<string, string> };
}

/**
 * How pushed messages count:
 * - "notify": each message is pushed, and stays in the inbox until a path that knows the
 *   model read it (wait_for_messages, a hook) takes it. A runtime that drops channel events
 *   (any MCP client but a Claude Code session started with this server as a channel) then
 *   loses nothing; one that shows them may show a message again through those paths.
 * - "ack": each message is acked once its event was written: for a session known to show
 *   channel events, whose model may never call a tool to read its inbox.
 */
export type PushMode = "notify" | "ack";

export interface ChannelPushOptions {
  client: TeamClient;
  /** The member's name: an approver's answer copied to the lead reads as a copy. */
  reader?: string | undefined;
  mode: PushMode;
  /** wait_for_messages' memory: in "ack" mode it skips what was pushed. */
  cursor: InboxCursor;
  /** Writes one notification (the MCP server's); resolves once it was written. */
  notify(event: ChannelEvent): Promise<void>;
  /** A failure that ends the push (the bridge goes on without it). */
  onError(err: unknown): void;
}

export interface ChannelPush {
  /** Ends the subscription; waits for the loop (and its acks) to finish. */
  stop(): Promise<void>;
}

/**
 * Subscribes to the member's inbox (the backlog after the ack cursor, then live) and sends
 * each message as a channel event. A message is never acked before its event was written:
 * a bridge killed between the two pushes it again on its next start (at-least-once); a
 * request that was answered in between is then shown as no longer pending.
 */
export function startChannelPush(o: ChannelPushOptions): ChannelPush {
  const stop = new AbortController();
  const inbox = o.client.inbox({ autoAck: false, signal: stop.signal });
  const reader = createPromptReader(o.reader ? { reader: o.reader } : {});
  const loop = (async () => {
    for await (const envelope of inbox) {
      await learnStatuses(o.client, reader, [envelope]);
      await o.notify(channelEvent(envelope, reader.render(envelope)));
      if (o.mode === "ack") {
        o.cursor.returnedSeq =
          o.cursor.returnedSeq === undefined || envelope.seq > o.cursor.returnedSeq
            ? envelope.seq
            : o.cursor.returnedSeq;
        inbox.ack(envelope);
      }
    }
  })().catch((err: unknown) => {
    if (!stop.signal.aborted) o.onError(err);
  });
  return {
    async stop() {
      stop.abort();
      await loop;
      await inbox.close();
    },
  };
}

/** One envelope as a channel event: its prompt text, and plain string attributes. */
export function channelEvent(envelope: Envelope, content: string): ChannelEvent {
  const kind = envelope.message?.kind.case ?? "unknown";
  return {
    method: CHANNEL_METHOD,
    params: {
      content,
      meta: {
        from: envelope.from || "server",
        seq: String(envelope.seq),
        kind: kind.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
        ...(envelope.requestId ? { request_id: envelope.requestId } : {}),
      },
    },
  };
}
