import type { Interceptor } from "@connectrpc/connect";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import { LimitError } from "../errors.js";

export interface SendRateOptions {
  /** Sends a member may make per second, sustained. 0 turns the limit off. */
  perSecond: number;
  /** Sends a member may make at once after being idle (the bucket's size). */
  burst: number;
  /** The clock, in milliseconds (tests give their own). */
  now?: () => number;
}

export interface SendRateLimiter<K = number> {
  /** Takes one send for `memberId` (or any key): undefined when allowed, else ms until one is. */
  take(memberId: K): number | undefined;
  /** Members with a partly drained bucket (the rest hold no memory). */
  readonly size: number;
}

/** Buckets are pruned of full (idle) members once the map holds this many. */
const PRUNE_AT = 10_000;

/**
 * A token bucket per member: `burst` sends at once, refilled at `perSecond`. A member that
 * is idle long enough to refill holds no entry, so memory follows the members sending now.
 * Per server process: with several replicas behind a balancer a member may get up to one
 * allowance per replica.
 */
export function createSendRateLimiter<K = number>(options: SendRateOptions): SendRateLimiter<K> {
  const now = options.now ?? (() => performance.now());
  const buckets = new Map<K, { tokens: number; at: number }>();
  const refill = (b: { tokens: number; at: number }, t: number) => {
    b.tokens = Math.min(options.burst, b.tokens + ((t - b.at) * options.perSecond) / 1000);
    b.at = t;
  };
  const prune = (t: number) => {
    for (const [id, b] of buckets) {
      refill(b, t);
      if (b.tokens >= options.burst) buckets.delete(id);
    }
  };
  return {
    take(memberId) {
      const t = now();
      let bucket = buckets.get(memberId);
      if (!bucket) {
        if (buckets.size >= PRUNE_AT) prune(t);
        bucket = { tokens: options.burst, at: t };
        buckets.set(memberId, bucket);
      } else {
        refill(bucket, t);
      }
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return undefined;
      }
      return ((1 - bucket.tokens) * 1000) / options.perSecond;
    },
    get size() {
      return buckets.size;
    },
  };
}

/**
 * Refuses a member's Send beyond its rate with ResourceExhausted (limit "send-rate") and a
 * RetryInfo detail saying when the next one is allowed. It runs before the journal: a flood
 * of refused sends must not turn into a flood of journal lines.
 */
export function sendRateInterceptor(options: SendRateOptions): Interceptor {
  const limiter = createSendRateLimiter(options);
  return (next) => async (req) => {
    if (options.perSecond > 0 && req.method === TeamService.method.send) {
      const caller = requireCaller(req.contextValues);
      const waitMs = limiter.take(caller.id);
      if (waitMs !== undefined) {
        throw new LimitError(
          "send-rate",
          `member "${caller.name}" may send ${options.perSecond} ` +
            `message${options.perSecond === 1 ? "" : "s"} a second ` +
            `(bursts of ${options.burst}); retry in ${Math.ceil(waitMs)} ms`,
          waitMs,
        );
      }
    }
    return next(req);
  };
}
