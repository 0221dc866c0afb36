import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  HeartbeatSchema,
  type SubscribeRequest,
  type SubscribeResponse,
  SubscribeResponseSchema,
  TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import { LimitError } from "../errors.js";
import { responseCutKey } from "../http/slow-consumer-guard.js";
import { type WritePressure, writePressureKey } from "../http/write-pressure.js";
import type { InboxHub, Subscription } from "../inbox/hub.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Database } from "../store/database.js";
import { inboxPosition, type StoredMessage } from "../store/inbox.js";
import { createInboxReader, type InboxReader } from "../store/read-batcher.js";
import { toEnvelope } from "./convert.js";
import { deadlineError, throwIfDeadlinePassed } from "./deadline.js";
import type { SlowConsumerBackoff } from "./slow-consumer-backoff.js";

/** Rows read per query at most. */
const BATCH = 256;
/**
 * Bytes of message bodies read per query (the first row always comes), by level: a stream
 * starts at the smallest and goes one level up after each full page written out without a
 * blocked write, up to 1 MiB; a blocked write sends it back to the smallest. The rest of a
 * page is let go when a write blocks (see deliverPage): with large pages, a client that
 * reads slowly would make the server read a page from the database for every few KiB it
 * takes; small pages bound that to about twice what it reads.
 */
const PAGE_BYTES = [32, 64, 128, 256, 512, 1024].map((kib) => kib * 1024);

export interface SubscribeOptions {
  db: Database;
  hub: InboxHub;
  /** A heartbeat is sent after this long without a message. */
  heartbeatIntervalMs: number;
  /** Subscriptions one member may hold open at once in this process. */
  maxPerMember: number;
  metrics?: Metrics | undefined;
  /** Refuses a member's reopen for a while after its stream was cut for not reading. */
  backoff?: SlowConsumerBackoff | undefined;
}

interface PageEnd {
  /** The last seq delivered (or the cursor the page was read after). */
  cursor: bigint;
  /** More rows may be waiting: read again at once. */
  more: boolean;
  /** A write of this page was not accepted at once (the client is reading slowly, or not). */
  blocked: boolean;
}

/** What one stream's delivery loop shares with its pages. */
interface StreamState {
  subscription: Subscription;
  pressure: WritePressure | undefined;
  metrics: Metrics | undefined;
  /** Backlog read at subscribe is not live: its delivery latency is not recorded. */
  live: boolean;
  /** Counted in the blocked-streams gauge now. */
  blocked: boolean;
}

/** What a Subscribe call yields, over every protocol (subscribeHandler below serves it). */
export type Deliveries = (
  caller: Caller,
  request: SubscribeRequest,
  signals: {
    call: AbortSignal;
    cut?: AbortSignal | undefined;
    /** When the transport's writes are not accepted (the stream stops holding its page). */
    pressure?: WritePressure | undefined;
  },
) => AsyncGenerator<SubscribeResponse>;

/**
 * Subscribe: the backlog after the cursor, then live messages. The database is read after
 * every wake-up, from the last seq this stream delivered, so the stream sees every row in
 * seq order however wake-ups are coalesced; the subscription is registered before the first
 * read, so no commit can fall between the read and the wait.
 */
export function createDeliveries(options: SubscribeOptions): Deliveries {
  const { db, hub, heartbeatIntervalMs, maxPerMember, metrics, backoff } = options;
  // Shared by every subscription of this process: reads woken together go together (one
  // reader per page size: a query has one byte limit).
  const readers: InboxReader[] = PAGE_BYTES.map((maxBytes) =>
    createInboxReader(db, { limit: BATCH, maxBytes }),
  );
  return async function* deliveries(caller, req, signals) {
    // Streams do not pass the rules interceptor (it reads unary requests): the same table,
    // applied here.
    checkRules({ method: TeamService.method.subscribe, request: req, caller });
    backoff?.check("Subscribe", caller.id, caller.name);
    // Each stream holds a subscription, a generator and its write buffer while its client
    // does not read: one token must not be able to open them without bound (bench
    // "stalled" opens thousands).
    if (hub.countOf(caller.id) >= maxPerMember) {
      throw new LimitError(
        "subscriptions-per-member",
        `member "${caller.name}" already has ${maxPerMember} open subscriptions ` +
          "(MAX_SUBSCRIPTIONS_PER_MEMBER); close one, or resume on the one you have",
      );
    }
    const subscription = hub.open(caller.id, signals.call);
    // Also released when the server cuts a client that stopped reading: the generator
    // may then be stuck in a write that never settles, but the hub forgets it at once.
    signals.cut?.addEventListener(
      "abort",
      () => {
        subscription.close();
        backoff?.cut("Subscribe", caller.id);
      },
      { once: true },
    );
    const state: StreamState = {
      subscription,
      pressure: signals.pressure,
      metrics,
      live: false,
      blocked: false,
    };
    try {
      let cursor = req.afterSeq ?? (await inboxPosition(db, caller.id)).ackedSeq;
      let level = 0;
      for (;;) {
        // The next page is read only here, once the consumer took the last message of the
        // page before, i.e. once the stream accepted it (it pulls after 'drain').
        const end = yield* deliverPage(readers[level] as InboxReader, caller, state, cursor);
        cursor = end.cursor;
        if (end.blocked) level = 0;
        else if (end.more) level = Math.min(level + 1, readers.length - 1);
        // A full page (by rows or by bytes) means there may be more: read on at once.
        if (end.more && !subscription.endReason) continue;
        state.live = true;
        const woke = await subscription.wait(heartbeatIntervalMs);
        if (woke === "ended") break;
        if (woke === "timeout") {
          yield create(SubscribeResponseSchema, {
            event: { case: "heartbeat", value: create(HeartbeatSchema, { lastSeq: cursor }) },
          });
        }
      }
      const error = subscription.endReason?.error;
      if (error) throw error;
      // A stream whose deadline passed ends DeadlineExceeded, not OK (deadline.ts).
      throwIfDeadlinePassed(signals.call);
    } catch (err) {
      // The deadline aborted the call's signal: the loop ends with "canceled", or throws.
      throw deadlineError(signals.call) ?? err;
    } finally {
      if (state.blocked) metrics?.streamBlocked(-1);
      subscription.close();
    }
  };
}

/**
 * Reads one page after `after` and yields its envelopes. A generator of its own, so that
 * nothing of the page (up to 1 MiB of messages) stays referenced while the subscription
 * then waits, idle, possibly for hours.
 *
 * While the consumer writes a message out, this generator is suspended at its yield. When
 * that write is not accepted (the client is not reading: its HTTP/2 window is full), the
 * rest of the page is let go at once, and read again from the last message written once
 * the stream drained. A stalled stream so holds its write buffer and nothing of the page,
 * however many streams stall.
 */
async function* deliverPage(
  reader: InboxReader,
  caller: Caller,
  state: StreamState,
  after: bigint,
): AsyncGenerator<SubscribeResponse, PageEnd> {
  const metrics = state.metrics;
  metrics?.pageRead();
  const page = await reader.read(caller.id, after);
  const messages = page.messages;
  const read = messages.length;
  // Bytes of this page not yet written out, for the held-bytes gauge.
  let held = 0;
  if (metrics) {
    for (const m of messages) held += m.body.byteLength;
    metrics.pageBytesHeld(held);
  }
  let next = 0;
  let blocked = false;
  const unlisten = state.pressure?.onBlocked(() => {
    blocked = true;
    // The message being written is at next - 1; the ones after it are let go.
    if (metrics) {
      let dropped = 0;
      for (let i = next; i < messages.length; i++)
        dropped += (messages[i] as StoredMessage).body.byteLength;
      held -= dropped;
      metrics.pageBytesHeld(-dropped);
    }
    messages.length = Math.min(messages.length, next);
    if (!state.blocked) {
      state.blocked = true;
      metrics?.streamBlocked(1);
    }
  });
  let cursor = after;
  try {
    while (next < messages.length) {
      if (state.subscription.endReason) break;
      // What is needed after the yield, read first: while the consumer writes, this frame
      // holds no reference to the row or its envelope (a stalled write may last 30 s).
      const { seq, sentAt } = messages[next] as StoredMessage;
      const bytes = (messages[next] as StoredMessage).body.byteLength;
      if (metrics) {
        held -= bytes;
        metrics.pageBytesHeld(-bytes);
      }
      yield takeEnvelope(caller.teamName, messages, next++);
      // Resumed: the consumer wrote the message out (and waited for 'drain' if it had to).
      cursor = seq;
      if (state.blocked) {
        state.blocked = false;
        metrics?.streamBlocked(-1);
      }
      if (state.live) metrics?.delivered(sentAt);
    }
  } finally {
    unlisten?.();
    // Left early (the stream ended): what was not written is let go with the page.
    if (metrics && held !== 0) metrics.pageBytesHeld(-held);
  }
  return { cursor, more: page.more || messages.length < read, blocked };
}

/** The response for messages[i], whose slot is emptied: the page no longer holds the row. */
function takeEnvelope(team: string, messages: StoredMessage[], i: number): SubscribeResponse {
  const row = messages[i] as StoredMessage;
  (messages as (StoredMessage | undefined)[])[i] = undefined;
  return create(SubscribeResponseSchema, {
    event: { case: "envelope", value: toEnvelope(team, row) },
  });
}

/** Subscribe as a connect handler (every protocol, gRPC on the bare stream too). */
export function subscribeHandler(
  deliveries: Deliveries,
): Pick<ServiceImpl<typeof TeamService>, "subscribe"> {
  return {
    subscribe(req, ctx) {
      return deliveries(requireCaller(ctx.values), req, {
        call: ctx.signal,
        cut: ctx.values.get(responseCutKey),
        pressure: ctx.values.get(writePressureKey),
      });
    },
  };
}
