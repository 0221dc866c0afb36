import type { Client } from "@connectrpc/connect";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import type {
  SubscribeResponse,
  TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { createAcker } from "./acker.js";
import type { BackoffOptions } from "./backoff.js";
import { resumableStream } from "./resumable-stream.js";
import type { TeamError } from "./team-error.js";

export interface InboxOptions {
  /** Start after this seq. Unset: after the member's ack cursor (where it left off). */
  afterSeq?: bigint | number;
  /**
   * Ack each envelope once the loop body that received it has finished (the next turn of
   * the loop). Default true. With false, call `inbox.ack(envelope)` when it is handled.
   */
  autoAck?: boolean;
  /** Ends the iteration: the loop exits normally, acks are flushed. */
  signal?: AbortSignal;
  /** Delays between reconnects. */
  backoff?: BackoffOptions;
  /**
   * With no event (message or heartbeat) for this long while waiting, the connection is
   * presumed dead and replaced. Default 45 s: three of the server's default heartbeats.
   */
  idleTimeoutMs?: number;
  /** Told when the stream opens, delivers its first event, or breaks. */
  onStatus?: (status: InboxStatus) => void;
}

export type InboxStatus =
  | { state: "connecting"; afterSeq: bigint | undefined }
  | { state: "connected" }
  | { state: "disconnected"; error: TeamError | undefined; retryInMs: number };

/**
 * A member's inbox as an async iterator that never loses a message: each envelope is handed
 * to the consumer exactly once, in seq order, across broken streams and server restarts.
 *
 *     for await (const envelope of team.inbox()) { ... }   // acked when the body returns
 *
 * Leaving the loop (break, throw) does not ack the envelope being handled: at-least-once
 * across processes means an unfinished message is delivered again to the next subscriber.
 */
export interface Inbox extends AsyncIterable<Envelope> {
  /** Marks everything up to this envelope (or seq) handled; sent in the background. */
  ack(handled: Envelope | bigint): void;
  /** Resolves when every ack so far has reached the server; rejects if one could not. */
  flush(): Promise<void>;
  /** Ends the iteration and flushes acks. */
  close(): Promise<void>;
  /** The seq of the last envelope handed to the consumer. */
  readonly lastSeq: bigint | undefined;
  /** How many times a stream was opened (1 + reconnects). */
  readonly connects: number;
  /** Envelopes received again after a reconnect and dropped. */
  readonly duplicates: number;
}

export function createInbox(rpc: Client<typeof TeamService>, options: InboxOptions = {}): Inbox {
  const autoAck = options.autoAck ?? true;
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  const report = options.onStatus ?? (() => {});
  const closed = new AbortController();
  const onAbort = () => closed.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) closed.abort();
  const acker = createAcker(rpc);
  let lastSeq = options.afterSeq === undefined ? undefined : BigInt(options.afterSeq);
  let connects = 0;
  let duplicates = 0;
  let iterating = false;

  /** A response of the stream: the envelope to hand out, if it is new. */
  const onResponse = ({ event }: SubscribeResponse): Envelope | undefined => {
    // A heartbeat names the stream's cursor: where to resume if nothing came yet.
    if (event.case === "heartbeat" && lastSeq === undefined) lastSeq = event.value.lastSeq;
    if (event.case !== "envelope") return undefined;
    if (lastSeq !== undefined && event.value.seq <= lastSeq) {
      duplicates++;
      return undefined;
    }
    lastSeq = event.value.seq;
    return event.value;
  };

  async function* envelopes(): AsyncGenerator<Envelope> {
    try {
      const stream = resumableStream({
        open: (signal) =>
          rpc.subscribe(lastSeq === undefined ? {} : { afterSeq: lastSeq }, { signal }),
        onResponse,
        closed: closed.signal,
        backoff: options.backoff,
        idleTimeoutMs,
        onStatus(status) {
          if (status.state === "connecting") {
            connects++;
            report({ state: "connecting", afterSeq: lastSeq });
            return;
          }
          report(status);
          if (status.state === "connected") acker.kick(); // acks that failed while it was away
        },
      });
      for await (const envelope of stream) {
        yield envelope;
        // The loop body that received it has finished.
        if (autoAck) acker.ack(envelope.seq);
      }
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
      await acker.flush().catch(() => {}); // best effort: the server may be gone for good
    }
  }

  return {
    [Symbol.asyncIterator]() {
      if (iterating) throw new Error("an inbox can be iterated once; create another one");
      iterating = true;
      return envelopes();
    },
    ack(handled) {
      acker.ack(typeof handled === "bigint" ? handled : handled.seq);
    },
    flush: () => acker.flush(),
    async close() {
      closed.abort();
      await acker.flush();
    },
    get lastSeq() {
      return lastSeq;
    },
    get connects() {
      return connects;
    },
    get duplicates() {
      return duplicates;
    },
  };
}
