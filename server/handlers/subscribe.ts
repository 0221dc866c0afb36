import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  HeartbeatSchema,
  type SubscribeRequest,
  type SubscribeResponse,
  SubscribeResponseSchema,
  TeamService,
} from "../../gen/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import { LimitError } from "../errors.js";
import { responseCutKey } from "../http/slow-consumer-guard.js";
import type { InboxHub, Subscription } from "../inbox/hub.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Database } from "../store/database.js";
import { inboxPosition } from "../store/inbox.js";
import { createInboxReader, type InboxReader } from "../store/read-batcher.js";
import { toEnvelope } from "./convert.js";

/** Rows and bytes read per query: bound the memory one subscription holds. */
const BATCH = 256;
const BATCH_BYTES = 1024 * 1024;

export interface SubscribeOptions {
  db: Database;
  hub: InboxHub;
  /** A heartbeat is sent after this long without a message. */
  heartbeatIntervalMs: number;
  /** Subscriptions one member may hold open at once in this process. */
  maxPerMember: number;
}

interface PageEnd {
  /** The last seq delivered (or the cursor the page was read after). */
  cursor: bigint;
  /** More rows may be waiting: read again at once. */
  more: boolean;
}

/** What a Subscribe call yields, whichever way it is served (connect, or the gRPC fast path). */
export type Deliveries = (
  caller: Caller,
  request: SubscribeRequest,
  signals: { call: AbortSignal; cut?: AbortSignal | undefined },
) => AsyncGenerator<SubscribeResponse>;

/**
 * Subscribe: the backlog after the cursor, then live messages. The database is read after
 * every wake-up, from the last seq this stream delivered, so the stream sees every row in
 * seq order however wake-ups are coalesced; the subscription is registered before the first
 * read, so no commit can fall between the read and the wait.
 */
export function createDeliveries(options: SubscribeOptions): Deliveries {
  const { db, hub, heartbeatIntervalMs, maxPerMember } = options;
  // Shared by every subscription of this process: reads woken together go together.
  const reader: InboxReader = createInboxReader(db, { limit: BATCH, maxBytes: BATCH_BYTES });
  return async function* deliveries(caller, req, signals) {
    // Streams do not pass the rules interceptor (it reads unary requests): the same table,
    // applied here.
    checkRules({ method: TeamService.method.subscribe, request: req, caller });
    // Each stream holds up to a page (1 MiB) while its client does not read: one token
    // must not be able to open them without bound (2,000 stalled streams took 2 GiB).
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
    signals.cut?.addEventListener("abort", () => subscription.close(), { once: true });
    try {
      let cursor = req.afterSeq ?? (await inboxPosition(db, caller.id)).ackedSeq;
      for (;;) {
        const end = yield* deliverPage(reader, caller, subscription, cursor);
        cursor = end.cursor;
        // A full page (by rows or by bytes) means there may be more: read on at once.
        if (end.more && !subscription.endReason) continue;
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
    } finally {
      subscription.close();
    }
  };
}

/**
 * Reads one page after `after` and yields its envelopes. A generator of its own, so that
 * nothing of the page (up to 1 MiB of messages) stays referenced while the subscription
 * then waits, idle, possibly for hours.
 */
async function* deliverPage(
  reader: InboxReader,
  caller: Caller,
  subscription: Subscription,
  after: bigint,
): AsyncGenerator<SubscribeResponse, PageEnd> {
  const page = await reader.read(caller.id, after);
  let cursor = after;
  for (const message of page.messages) {
    if (subscription.endReason) break;
    yield create(SubscribeResponseSchema, {
      event: { case: "envelope", value: toEnvelope(caller.teamName, message) },
    });
    cursor = message.seq;
  }
  return { cursor, more: page.more };
}

/** Subscribe as a connect handler (Connect, gRPC-Web, and gRPC the fast path leaves alone). */
export function subscribeHandler(
  deliveries: Deliveries,
): Pick<ServiceImpl<typeof TeamService>, "subscribe"> {
  return {
    subscribe(req, ctx) {
      return deliveries(requireCaller(ctx.values), req, {
        call: ctx.signal,
        cut: ctx.values.get(responseCutKey),
      });
    },
  };
}
