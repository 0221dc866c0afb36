import { createContextKey } from "@connectrpc/connect";
import { DomainError, LimitError } from "../errors.js";

/** The client's address (the TCP peer), set by every path that serves a call. */
export const peerAddressKey = createContextKey<string | undefined>(undefined, {
  description: "the address of the client that made the call",
});

/** The limit's name in refusals and metrics. */
export const AUTH_RATE_LIMIT = "auth-failures";

export interface AuthThrottleOptions {
  /** Failed authentications an address may make per second, sustained. 0 turns it off. */
  perSecond: number;
  /** Failures an address may make at once (the bucket's size). */
  burst: number;
  /** How long a token found unknown is refused without a database look-up. */
  unknownTtlMs: number;
  /** The clock, in milliseconds (tests give their own). */
  now?: () => number;
}

export interface AuthThrottle {
  /**
   * Before a database look-up of a token the caller cache does not know: throws
   * Unauthenticated when the token was found unknown a moment ago ("unknown token", as the
   * look-up would say), or (limit auth-failures, with RetryInfo) when `address` has no
   * failures left. Neither costs a database transaction.
   */
  beforeLookUp(address: string | undefined, tokenHashHex: string): void;
  /**
   * A look-up found no such token: `address` spends one failure, the hash is remembered.
   * (A missing or malformed token costs no look-up, and spends nothing.)
   */
  unknown(address: string | undefined, tokenHashHex: string): void;
}

/** Past this many entries, each map is pruned (full buckets, expired hashes). */
const PRUNE_AT = 10_000;

/**
 * Failed authentication, throttled per client address in front of the database: a token
 * bucket of failures per address, and a short negative cache of unknown token hashes. Only
 * failures spend from the bucket, and a token the caller cache holds (an active member that
 * called within CALLER_CACHE_TTL_MS) never reaches this: a valid token in use is not slowed.
 * Per server process, like the send rate.
 */
export function createAuthThrottle(options: AuthThrottleOptions): AuthThrottle {
  const now = options.now ?? (() => performance.now());
  const buckets = new Map<string, { tokens: number; at: number }>();
  const unknownUntil = new Map<string, number>();
  const off = options.perSecond <= 0;
  const refill = (b: { tokens: number; at: number }, t: number) => {
    b.tokens = Math.min(options.burst, b.tokens + ((t - b.at) * options.perSecond) / 1000);
    b.at = t;
  };
  const bucketOf = (address: string, t: number) => {
    let b = buckets.get(address);
    if (!b) {
      if (buckets.size >= PRUNE_AT) {
        for (const [a, other] of buckets) {
          refill(other, t);
          if (other.tokens >= options.burst) buckets.delete(a);
        }
      }
      b = { tokens: options.burst, at: t };
      buckets.set(address, b);
    } else {
      refill(b, t);
    }
    return b;
  };
  const refuse = (waitMs: number, why: string): never => {
    throw new LimitError(
      AUTH_RATE_LIMIT,
      `${why}; retry in ${Math.ceil(waitMs)} ms`,
      waitMs,
      "",
      "unauthenticated",
    );
  };
  const spend = (address: string | undefined) => {
    if (off || address === undefined) return;
    const b = bucketOf(address, now());
    b.tokens = Math.max(0, b.tokens - 1);
  };
  return {
    beforeLookUp(address, hash) {
      if (off) return;
      const t = now();
      const until = unknownUntil.get(hash);
      if (until !== undefined) {
        // The same answer a look-up gives (the client cannot tell), without the look-up.
        if (until > t) throw new DomainError("unauthenticated", "unknown token");
        unknownUntil.delete(hash);
      }
      if (address === undefined) return;
      const b = bucketOf(address, t);
      if (b.tokens < 1) {
        refuse(
          ((1 - b.tokens) * 1000) / options.perSecond,
          `too many failed authentications from this address (${options.perSecond}/s, ` +
            `bursts of ${options.burst}: AUTH_FAILURES_PER_SEC, AUTH_FAILURES_BURST)`,
        );
      }
    },
    unknown(address, hash) {
      if (off) return;
      const t = now();
      if (unknownUntil.size >= PRUNE_AT) {
        for (const [h, until] of unknownUntil) if (until <= t) unknownUntil.delete(h);
        // Still full: the oldest go (a map keeps insertion order).
        for (const h of unknownUntil.keys()) {
          if (unknownUntil.size < PRUNE_AT) break;
          unknownUntil.delete(h);
        }
      }
      unknownUntil.set(hash, t + options.unknownTtlMs);
      spend(address);
    },
  };
}
