import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  HeartbeatSchema,
  SubscribeResponseSchema,
  type TeamService,
} from "../../gen/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import type { InboxHub } from "../inbox/hub.js";
import type { Database } from "../store/database.js";
import { inboxPosition, readInbox } from "../store/inbox.js";
import { toEnvelope } from "./convert.js";

/** Rows read per query: bounds the memory one subscription holds. */
const BATCH = 256;

export interface SubscribeOptions {
  db: Database;
  hub: InboxHub;
  /** A heartbeat is sent after this long without a message. */
  heartbeatIntervalMs: number;
}

/**
 * Subscribe: the backlog after the cursor, then live messages. The database is read after
 * every wake-up, from the last seq this stream delivered, so the stream sees every row in
 * seq order however wake-ups are coalesced; the subscription is registered before the first
 * read, so no commit can fall between the read and the wait.
 */
export function subscribeHandler(
  options: SubscribeOptions,
): Pick<ServiceImpl<typeof TeamService>, "subscribe"> {
  const { db, hub, heartbeatIntervalMs } = options;
  return {
    async *subscribe(req, ctx) {
      const caller = requireCaller(ctx.values);
      const subscription = hub.open(caller.id, ctx.signal);
      try {
        let cursor = req.afterSeq ?? (await inboxPosition(db, caller.id)).ackedSeq;
        for (;;) {
          const batch = await readInbox(db, caller.id, cursor, BATCH);
          for (const message of batch) {
            if (subscription.endReason) break;
            yield create(SubscribeResponseSchema, {
              event: { case: "envelope", value: toEnvelope(caller.teamName, message) },
            });
            cursor = message.seq;
          }
          if (batch.length === BATCH && !subscription.endReason) continue;
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
    },
  };
}
