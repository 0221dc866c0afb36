import type { Client } from "@connectrpc/connect";
import type { Envelope } from "../gen/team/v1/records_pb.js";
import type { TeamService } from "../gen/team/v1/team_service_pb.js";
import { createAcker } from "./acker.js";
import { type BackoffOptions, createBackoff, sleep } from "./backoff.js";
import { RETRYABLE_STREAM_CODES } from "./stream-retry.js";
import { TeamError } from "./team-error.js";

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

  const backoff = createBackoff(options.backoff);

  /** One stream: yields new envelopes until it ends, or breaks (then `onBreak` has why). */
  async function* stream(onBreak: (err: unknown) => void): AsyncGenerator<Envelope> {
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    closed.signal.addEventListener("abort", stop, { once: true });
    connects++;
    report({ state: "connecting", afterSeq: lastSeq });
    const request = lastSeq === undefined ? {} : { afterSeq: lastSeq };
    const events = rpc.subscribe(request, { signal: attempt.signal })[Symbol.asyncIterator]();
    // One read is always in flight, also while the consumer handles an envelope, so the end
    // of a stream is read as soon as it arrives. connect-node does not free a stream that the
    // server has ended but whose end nobody read when it is aborted (it counts as open, and
    // its HTTP/2 connection then keeps the process alive): a teammate that approves its own
    // shutdown and leaves the loop would never exit.
    const read = () => {
      const next = events.next();
      next.catch(() => {}); // seen by the await below; an abort must not go unhandled
      return next;
    };
    let pending = read();
    let first = true;
    try {
      for (;;) {
        const next = await within(pending, idleTimeoutMs, stop);
        if (next.done) return;
        pending = read();
        if (first) {
          first = false;
          backoff.reset();
          report({ state: "connected" });
          acker.kick(); // acks that failed while the server was away
        }
        const event = next.value.event;
        // A heartbeat names the stream's cursor: where to resume if nothing came yet.
        if (event.case === "heartbeat" && lastSeq === undefined) lastSeq = event.value.lastSeq;
        if (event.case !== "envelope") continue;
        if (lastSeq !== undefined && event.value.seq <= lastSeq) {
          duplicates++;
          continue;
        }
        lastSeq = event.value.seq;
        yield event.value;
      }
    } catch (err) {
      onBreak(err);
    } finally {
      closed.signal.removeEventListener("abort", stop);
      attempt.abort(); // the consumer left mid-stream: end the HTTP stream too
    }
  }

  async function* envelopes(): AsyncGenerator<Envelope> {
    try {
      while (!closed.signal.aborted) {
        let broke: unknown;
        for await (const envelope of stream((err) => (broke = err))) {
          yield envelope;
          if (autoAck) acker.ack(envelope.seq);
          if (closed.signal.aborted) return;
        }
        if (closed.signal.aborted) return;
        // A clean end is a server stopping gracefully: reconnect as after a break.
        const error = broke === undefined ? undefined : TeamError.fromError(broke);
        if (error && !RETRYABLE_STREAM_CODES.has(error.code)) throw error;
        const retryInMs = backoff.next();
        report({ state: "disconnected", error, retryInMs });
        await sleep(retryInMs, closed.signal);
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

/** The stream's next event, or an abort of the attempt when none comes within `ms`. */
async function within<T>(next: Promise<T>, ms: number, abort: () => void): Promise<T> {
  const timer = setTimeout(abort, ms);
  try {
    return await next;
  } finally {
    clearTimeout(timer);
  }
}
