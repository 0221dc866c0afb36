import type { BacklogLimits } from "../domain/limits.js";
import { LimitError } from "../errors.js";
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
   * inbox's seqs commit in order without gaps, nothing is acknowledged before commit, and
   * no recipient's unacked backlog passes `backlog` (limit "inbox-backlog").
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
export function createSender(db: Database, backlog: BacklogLimits): Sender {
  const batched = createBatcher(
    async (sends: BatchableSend[]) => {
      const results = await sendBatch(db, sends, backlog);
      // The batch refuses a send for a full inbox cautiously (it counts the batch's earlier
      // sends to that inbox, refused ones too). Such a send is decided again alone, in a
      // transaction, where only what is stored counts: a refusal then is exact. It costs a
      // transaction only when an inbox is at its limit.
      for (const [i, result] of results.entries()) {
        if (result instanceof LimitError && result.rule === "inbox-backlog") {
          results[i] = await sendMessage(db, sends[i] as BatchableSend, backlog).catch(
            (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
          );
        }
      }
      return results;
    },
    { maxBatch: 256, maxInFlight: 2 },
  );
  return {
    send: (input) => (isBatchable(input) ? batched(input) : sendMessage(db, input, backlog)),
  };
}
