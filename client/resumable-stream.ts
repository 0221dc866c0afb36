import { type BackoffOptions, createBackoff, sleep } from "./backoff.js";
import { RETRYABLE_STREAM_CODES } from "./stream-retry.js";
import { TeamError } from "./team-error.js";

/** How a resumable stream is doing; the inbox and the team watch add where they resume. */
export type StreamStatus =
  | { state: "connecting" }
  | { state: "connected" }
  | { state: "disconnected"; error: TeamError | undefined; retryInMs: number };

export interface ResumableStreamOptions<R, T> {
  /**
   * Opens one server stream, from where the last one left off (the caller keeps that
   * point, moved by `onResponse`). `signal` ends this attempt.
   */
  open(signal: AbortSignal): AsyncIterable<R>;
  /** One response of the stream: what to hand to the consumer, if anything. */
  onResponse(response: R): T | undefined;
  /** Ends the iteration: the loop exits normally. */
  closed: AbortSignal;
  /** Delays between reconnects. */
  backoff?: BackoffOptions | undefined;
  /** With no response for this long, the connection is presumed dead and replaced. */
  idleTimeoutMs: number;
  /** Told when a stream opens, delivers its first response, or breaks. */
  onStatus(status: StreamStatus): void;
}

/**
 * A long-lived server stream (Subscribe, WatchTeam) as one async iteration that survives
 * broken streams, silent connections and server restarts: it reconnects with backoff and
 * opens the next stream from where the last one left off. A refusal that retrying cannot fix
 * (stream-retry.ts) ends the iteration with its TeamError; a clean end is a server stopping
 * gracefully, and reconnects like a break.
 */
export async function* resumableStream<R, T>(
  options: ResumableStreamOptions<R, T>,
): AsyncGenerator<T> {
  const { closed } = options;
  const backoff = createBackoff(options.backoff);
  while (!closed.aborted) {
    let broke: unknown;
    for await (const value of attempt(
      options,
      () => backoff.reset(),
      (err) => (broke = err),
    )) {
      yield value;
      if (closed.aborted) return;
    }
    if (closed.aborted) return;
    const error = broke === undefined ? undefined : TeamError.fromError(broke);
    if (error && !RETRYABLE_STREAM_CODES.has(error.code)) throw error;
    // A refusal that says when to come back (RetryInfo: the slow-consumer back-off, a rate)
    // is retried no sooner: an earlier reopen would only be refused again.
    const retryInMs = Math.max(backoff.next(), error?.retryAfterMs ?? 0);
    options.onStatus({ state: "disconnected", error, retryInMs });
    await sleep(retryInMs, closed);
  }
}

/** One stream: yields what its responses hand out until it ends, or breaks (`onBreak`). */
async function* attempt<R, T>(
  options: ResumableStreamOptions<R, T>,
  connected: () => void,
  onBreak: (err: unknown) => void,
): AsyncGenerator<T> {
  const { closed, idleTimeoutMs, onStatus } = options;
  const controller = new AbortController();
  const stop = () => controller.abort();
  closed.addEventListener("abort", stop, { once: true });
  onStatus({ state: "connecting" });
  const responses = options.open(controller.signal)[Symbol.asyncIterator]();
  // One read is always in flight, also while the consumer handles a value, so the end of a
  // stream is read as soon as it arrives. connect-node does not free a stream that the
  // server has ended but whose end nobody read when it is aborted (it counts as open, and
  // its HTTP/2 connection then keeps the process alive): a teammate that approves its own
  // shutdown and leaves the loop would never exit.
  const read = () => {
    const next = responses.next();
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
        connected();
        onStatus({ state: "connected" });
      }
      const value = options.onResponse(next.value);
      if (value !== undefined) yield value;
    }
  } catch (err) {
    onBreak(err);
  } finally {
    closed.removeEventListener("abort", stop);
    controller.abort(); // the consumer left mid-stream: end the HTTP stream too
  }
}

/** The stream's next response, or an abort of the attempt when none comes within `ms`. */
async function within<T>(next: Promise<T>, ms: number, abort: () => void): Promise<T> {
  const timer = setTimeout(abort, ms);
  try {
    return await next;
  } finally {
    clearTimeout(timer);
  }
}
