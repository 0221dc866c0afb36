import type { BacklogLimits } from "../domain/limits.js";
import { LimitError } from "../errors.js";
import { createBatcher } from "./batcher.js";
import type { Database } from "./database.js";
import { type SendInput, type SendResult, sendMessage } from "./send.js";
import { type BatchableSend, sendBatch } from "./send-batch.js";
import { KeyTaken } from "./send-keys.js";

export interface Sender {
  /**
   * Stores one send and resolves once it is committed. The store picks the way: a send
   * without protocol hooks or a journal line (with or without an idempotency key) shares
   * one transaction and one commit with concurrent ones (group commit, see send-batch.ts);
   * a protocol step takes a transaction of its own (send.ts). Either way the same
   * guarantees hold: a retried message_id stores nothing new and replays the first result;
   * each inbox's seqs commit in order without gaps, nothing is acknowledged before commit,
   * and no recipient's unacked backlog passes `backlog` (limit "inbox-backlog").
   */
  send(input: SendInput): Promise<SendResult>;
}

/** A send the group commit can take: no protocol hooks, no journal line. */
export const isBatchable = (input: SendInput): boolean =>
  !input.requestId && !input.beforeAppend && !input.beforeCommit && !input.attempt;

/**
 * The store's one way in for member sends. Two batches in flight: one commits while the
 * next fills; under load batches grow by themselves up to 256 sends.
 */
export function createSender(db: Database, backlog: BacklogLimits): Sender {
  const batched = createBatcher(
    async (sends: BatchableSend[]) => {
      const results = await sendBatch(db, sends, backlog);
      // Decided again alone, in a transaction, once the batch committed:
      // - a send refused for a full inbox: the batch counts cautiously (the batch's earlier
      //   sends to that inbox, refused ones too); alone, only what is stored counts, so a
      //   refusal then is exact. It costs a transaction only when an inbox is at its limit;
      // - a send whose message_id was taken (a retry, or the same key twice in the batch):
      //   alone, it replays the first result or is refused AlreadyExists, against what is
      //   committed. It costs a transaction only for a retry.
      for (const [i, result] of results.entries()) {
        if (
          result instanceof KeyTaken ||
          (result instanceof LimitError && result.rule === "inbox-backlog")
        ) {
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
