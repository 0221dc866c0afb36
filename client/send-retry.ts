import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { type BackoffOptions, createBackoff, sleep } from "./backoff.js";

/**
 * A fresh idempotency key for a send that was given none. With a key, a send the server
 * may or may not have stored (its database failed over mid-commit, the connection dropped
 * before the answer) can be sent again and is stored once: the retry answers `replayed`.
 */
export const newMessageId = (): string => `c-${randomUUID()}`;

export interface RetryOptions {
  /** The whole call, all attempts and pauses together, ends by then. */
  timeoutMs: number;
  backoff?: BackoffOptions | undefined;
}

/**
 * Runs `attempt` again while it fails with Unavailable (the server restarting, its database
 * failing over), with backoff, until it succeeds, fails otherwise, or the time is up. Each
 * attempt gets the time that is left as its deadline. Only for calls that are safe to
 * repeat: a send with a message_id is; a send without one is not (it may be stored twice).
 */
export async function retryWhileUnavailable<T>(
  attempt: (timeoutMs: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  const backoff = createBackoff(options.backoff);
  for (;;) {
    try {
      return await attempt(Math.max(1, Math.ceil(deadline - Date.now())));
    } catch (err) {
      const delay = backoff.next();
      if (ConnectError.from(err).code !== Code.Unavailable || Date.now() + delay >= deadline) {
        throw err;
      }
      await sleep(delay);
    }
  }
}
