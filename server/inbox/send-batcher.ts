import type { Database } from "../store/database.js";
import type { SendResult } from "../store/send.js";
import { type BatchableSend, sendBatch } from "../store/send-batch.js";

export interface SendBatcher {
  /** Stores one send, possibly sharing its transaction with concurrent ones. */
  send(input: BatchableSend): Promise<SendResult>;
}

/** Sends per transaction at most. */
const MAX_BATCH = 256;
/** Batch transactions in flight at once (pipelining: one commits while the next fills). */
const MAX_IN_FLIGHT = 2;

/**
 * Group commit. A send that arrives while the database is busy with earlier batches waits
 * for the next one; a send that arrives when nothing is in flight goes at once, alone, so
 * an idle server adds no latency. Under load the batches grow by themselves, up to
 * MAX_BATCH, and many sends share one commit. Nothing is acknowledged before its batch has
 * committed.
 */
export function createSendBatcher(db: Database): SendBatcher {
  let queue: {
    input: BatchableSend;
    resolve: (r: SendResult) => void;
    reject: (e: unknown) => void;
  }[] = [];
  let inFlight = 0;

  const pump = () => {
    while (inFlight < MAX_IN_FLIGHT && queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      inFlight++;
      sendBatch(
        db,
        batch.map((b) => b.input),
      )
        .then(
          (results) => {
            results.forEach((r, i) => {
              const waiter = batch[i];
              if (r instanceof Error) waiter?.reject(r);
              else waiter?.resolve(r);
            });
          },
          (err) => {
            for (const b of batch) b.reject(err);
          },
        )
        .finally(() => {
          inFlight--;
          pump();
        });
    }
  };

  return {
    send(input) {
      return new Promise((resolve, reject) => {
        queue.push({ input, resolve, reject });
        pump();
      });
    },
  };
}
