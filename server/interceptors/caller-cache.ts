import type { Caller } from "../caller.js";

/**
 * Token → caller, for active members only, so that a call does not cost a database round
 * trip before its real work (under load, with sends sharing their commits, the look-up was
 * most of the queries a Send cost, and a query's socket write was the largest single cost in
 * the server's CPU profile).
 *
 * A revoked token must stop working at once. Revocation (RemoveMember, an approved
 * shutdown) always ends the member's streams through the hub, on this process directly and
 * on the others through LISTEN/NOTIFY: both paths call forgetMember. When the notification
 * connection was down, events may have been missed: clear() empties the cache. Entries also
 * expire after `ttlMs`, which bounds staleness after changes made outside the server (SQL by
 * hand). Sends check in their own transaction that the sender is still active, so a message
 * is never stored from a revoked token even in the moment before another process hears of
 * the revocation.
 */
export interface CallerCache {
  get(tokenHashHex: string): Caller | undefined;
  /**
   * Taken before a database look-up and handed to set(): a look-up that read the member
   * before a revocation and finished after it must not put the revoked member back.
   */
  epoch(): number;
  /** Caches the caller unless a revocation (or clear) happened since `epoch`. */
  set(tokenHashHex: string, caller: Caller, epoch: number): void;
  /**
   * `lookUp()`'s answer, shared by every call that asks for the same token while it runs,
   * and only by calls that asked before any revocation since it began (a later one looks
   * up again). Streams of one member opened together (a client reconnecting its feeds)
   * otherwise queued one database look-up each for the pool, behind which every other call
   * waited, though the first answer would have served them all.
   */
  shared<T>(tokenHashHex: string, epoch: number, lookUp: () => Promise<T>): Promise<T>;
  /** Drops every entry of this member (its token was revoked). */
  forgetMember(memberId: number): void;
  clear(): void;
  readonly size: number;
}

export function createCallerCache(options: {
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}): CallerCache {
  const now = options.now ?? Date.now;
  // Insertion order is expiry order (every entry lives ttlMs): the oldest goes first.
  const entries = new Map<string, { caller: Caller; expiresAt: number }>();
  // Bumped by every revocation: rare, so one counter for all members is enough.
  let revocations = 0;
  // Look-ups running, by token, with the epoch they began in.
  const inFlight = new Map<string, { epoch: number; answer: Promise<unknown> }>();
  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.expiresAt <= now()) {
        entries.delete(key);
        return undefined;
      }
      return entry.caller;
    },
    epoch: () => revocations,
    set(key, caller, epoch) {
      if (options.ttlMs <= 0 || epoch !== revocations) return;
      entries.delete(key);
      entries.set(key, { caller, expiresAt: now() + options.ttlMs });
      if (entries.size > options.maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
    },
    shared<T>(key: string, epoch: number, lookUp: () => Promise<T>): Promise<T> {
      const running = inFlight.get(key);
      if (running && running.epoch === epoch) return running.answer as Promise<T>;
      const answer = lookUp();
      const entry = { epoch, answer };
      inFlight.set(key, entry);
      const done = () => {
        if (inFlight.get(key) === entry) inFlight.delete(key);
      };
      answer.then(done, done);
      return answer;
    },
    forgetMember(memberId) {
      revocations++;
      for (const [key, entry] of entries) {
        if (entry.caller.id === memberId) entries.delete(key);
      }
    },
    clear() {
      revocations++;
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}
