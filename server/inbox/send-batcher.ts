import type { Database } from "../store/database.js";
import type { SendResult } from "../store/send.js";
import { type BatchableSend, sendBatch } from "../store/send-batch.js";
import { createBatcher } from "./batcher.js";

export interface SendBatcher {
  /** Stores one send, possibly sharing its transaction with concurrent ones. */
  send(input: BatchableSend): Promise<SendResult>;
}

/**
 * Group commit: concurrent plain sends share one statement and one commit (see
 * store/send-batch.ts). Nothing is acknowledged before its batch has committed. Two
 * batches in flight: one commits while the next fills.
 */
export function createSendBatcher(db: Database): SendBatcher {
  return {
    send: createBatcher((sends: BatchableSend[]) => sendBatch(db, sends), {
      maxBatch: 256,
      maxInFlight: 2,
    }),
  };
}
