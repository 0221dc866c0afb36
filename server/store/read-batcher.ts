import { createBatcher } from "./batcher.js";
import type { Database } from "./database.js";
import { type InboxPage, type InboxRead, readInboxes } from "./inbox.js";

export interface InboxReader {
  /** The messages after `afterSeq` of one inbox, possibly read together with others'. */
  read(memberId: number, afterSeq: bigint): Promise<InboxPage>;
}

/**
 * The reads of live subscriptions, grouped. A commit that reaches many inboxes (a broadcast
 * to the team) wakes all their subscriptions at once; reading alone, each costs a query and
 * a pooled connection, and the last subscriber waits behind everyone else's round trips.
 * Grouped, up to 32 reads share one query (store/inbox.ts readInboxes).
 *
 * Each read is capped at `limit` rows and `maxBytes` of bodies (the first row always
 * comes), so a batch holds at most 32 × (maxBytes + one message), two batches in flight.
 */
export function createInboxReader(
  db: Database,
  options: { limit: number; maxBytes: number },
): InboxReader {
  const read = createBatcher(
    (reads: InboxRead[]) => readInboxes(db, reads, options.limit, options.maxBytes),
    { maxBatch: 32, maxInFlight: 2 },
  );
  return { read: (memberId, afterSeq) => read({ memberId, afterSeq }) };
}
