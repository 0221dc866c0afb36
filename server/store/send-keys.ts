import type { Queryable } from "./database.js";
import type { SendInput } from "./send.js";

/** The fields of a send its idempotency key is made of. */
type KeyedSend = Pick<SendInput, "sender" | "messageId" | "fingerprint">;

/**
 * A send of a batch whose idempotency key was already taken: by an earlier send (committed,
 * or in flight until it committed), or by an earlier send of the same batch. It stored
 * nothing. sender.ts decides it again alone, after the batch committed, on the transaction
 * path: that one replays the first result, refuses a different message under the key
 * (AlreadyExists), or claims a key whose first send was refused. Never reaches a client.
 */
export class KeyTaken extends Error {
  override readonly name = "KeyTaken";
}

/**
 * Claims the idempotency keys of a batch's keyed sends, in the batch's transaction, before
 * anything else of the batch: so the batch never waits on a key while it holds inbox locks
 * (a transaction-path send takes its key first, then its inbox). Keys are claimed in key
 * order, so two batches that claim the same keys wait on each other in one direction only.
 * A key held by a transaction still running makes this statement wait until it ends, then
 * counts as taken if that transaction committed (ON CONFLICT looks at the key's latest
 * version, not at this statement's snapshot).
 *
 * Returns, per send, whether it may go on: true for sends without a key and for the first
 * send of the batch with each key that was free; false for a key taken (see KeyTaken).
 */
export async function claimKeys(tx: Queryable, sends: KeyedSend[]): Promise<boolean[]> {
  const firstOfKey = new Map<string, number>();
  const keyOf = (s: KeyedSend) => `${s.sender.id}\0${s.messageId}`;
  sends.forEach((s, i) => {
    if (s.messageId && !firstOfKey.has(keyOf(s))) firstOfKey.set(keyOf(s), i);
  });
  const candidates = [...firstOfKey.values()].map((i) => sends[i] as KeyedSend);
  const claimed = await tx.query<{ sender_id: number; message_id: string }>(
    `INSERT INTO sends (sender_id, message_id, fingerprint)
     SELECT * FROM unnest($1::int[], $2::text[], $3::bytea[]) AS k (sender_id, message_id, fingerprint)
     ORDER BY sender_id, message_id
     ON CONFLICT (sender_id, message_id) DO NOTHING
     RETURNING sender_id, message_id`,
    [
      candidates.map((s) => s.sender.id),
      candidates.map((s) => s.messageId),
      candidates.map((s) => s.fingerprint ?? new Uint8Array()),
    ],
  );
  const won = new Set(claimed.map((c) => `${c.sender_id}\0${c.message_id}`));
  return sends.map((s, i) => !s.messageId || (firstOfKey.get(keyOf(s)) === i && won.has(keyOf(s))));
}

/**
 * Gives back the keys of claimed sends the batch refused: a retry of a refused send is a new
 * attempt, as on the transaction path, where the refusal rolls the claim back.
 */
export async function releaseKeys(tx: Queryable, refused: KeyedSend[]): Promise<void> {
  if (refused.length === 0) return;
  await tx.query(
    `DELETE FROM sends s USING unnest($1::int[], $2::text[]) AS k (sender_id, message_id)
     WHERE s.sender_id = k.sender_id AND s.message_id = k.message_id`,
    [refused.map((s) => s.sender.id), refused.map((s) => s.messageId)],
  );
}
