import type { Envelope } from "../../gen/team/v1/records_pb.js";
import type { SubscribeRequest, SubscribeResponse } from "../../gen/team/v1/team_service_pb.js";
import type { TeamClient } from "./harness.js";
import { withTimeout } from "./timeout.js";

/** How long one read waits for the next event before failing with a clear message. */
const NEXT_EVENT_TIMEOUT_MS = 20_000;

/**
 * An open Subscribe stream read one event at a time, so that a test can act (send, ack)
 * between reads and see exactly what came, in order, heartbeats included.
 */
export interface SubscriptionReader {
  /** Every event read so far, in order. */
  readonly events: SubscribeResponse[];
  /** The next event; fails if the stream ends or nothing comes within `timeoutMs`. */
  next(timeoutMs?: number): Promise<SubscribeResponse>;
  /** Reads until `stop` accepts an event; returns the events read by this call. */
  until(stop: (event: SubscribeResponse) => boolean): Promise<SubscribeResponse[]>;
  /** Reads until `count` envelopes more have come; returns the events read by this call. */
  envelopes(count: number): Promise<SubscribeResponse[]>;
  /** Cancels the call. */
  close(): void;
}

export function openSubscription(
  client: TeamClient,
  request: Partial<SubscribeRequest> = {},
): SubscriptionReader {
  const abort = new AbortController();
  const iterator = client.subscribe(request, { signal: abort.signal })[Symbol.asyncIterator]();
  const events: SubscribeResponse[] = [];
  const next = async (timeoutMs = NEXT_EVENT_TIMEOUT_MS) => {
    // Nothing is read while waiting, so what came so far can be described up front.
    const what = `a Subscribe event; so far: ${describeEvents(events)}`;
    const result = await withTimeout(what, timeoutMs, iterator.next());
    if (result.done) throw new Error(`the stream ended; it sent: ${describeEvents(events)}`);
    events.push(result.value);
    return result.value;
  };
  const until = async (stop: (event: SubscribeResponse) => boolean) => {
    const read: SubscribeResponse[] = [];
    for (;;) {
      const event = await next();
      read.push(event);
      if (stop(event)) return read;
    }
  };
  return {
    events,
    next,
    until,
    envelopes(count) {
      let seen = 0;
      return until((e) => e.event.case === "envelope" && ++seen >= count);
    },
    close: () => abort.abort(),
  };
}

/** The envelopes among `events`, in order. */
export function envelopesOf(events: SubscribeResponse[]): Envelope[] {
  return events.flatMap((e) => (e.event.case === "envelope" ? [e.event.value] : []));
}

/** e.g. "env#1 hb@1 env#2", for failure messages. */
export function describeEvents(events: SubscribeResponse[]): string {
  const parts = events.map((e) =>
    e.event.case === "envelope"
      ? `env#${e.event.value.seq}`
      : e.event.case === "heartbeat"
        ? `hb@${e.event.value.lastSeq}`
        : "?",
  );
  return parts.length > 0 ? parts.join(" ") : "(nothing)";
}
