import { createBatcher } from "./batcher.js";
import type { Database } from "./database.js";
import { type SendInput, type SendResult, sendMessage } from "./send.js";
import { type BatchableSend, sendBatch } from "./send-batch.js";

export interface Sender {
  /**
   * Stores one send and resolves once it is committed. The store picks the way: a plain
   * send shares one statement and one commit with concurrent ones (group commit, see
   * send-batch.ts); a send with an idempotency key, a protocol step or a journal line
   * takes a transaction of its own (send.ts). Either way the same guarantees hold: each
   * inbox's seqs commit in order without gaps, and nothing is acknowledged before commit.
   */
  send(input: SendInput): Promise<SendResult>;
}

/** A send the group-commit statement can take: no idempotency key, no hooks, no journal. */
export const isBatchable = (input: SendInput): boolean =>
  !input.messageId &&
  !input.requestId &&
  !input.beforeAppend &&
  !input.beforeCommit &&
  !input.attempt;

/**
 * The store's one way in for member sends. Two batches in flight: one commits while the
 * next fills; under load batches grow by themselves up to 256 sends.
 */
export function createSender(db: Database): Sender {
  const batched = createBatcher((sends: BatchableSend[]) => sendBatch(db, sends), {
    maxBatch: 256,
    maxInFlight: 2,
  });
  return {
    send: (input) => (isBatchable(input) ? batched(input) : sendMessage(db, input)),
  };
}
