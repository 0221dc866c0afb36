import type { HandlerContext } from "@connectrpc/connect";

/**
 * Pieces of the scripted in-memory servers that the client's stream tests share
 * (client-inbox, client-team-watch): each test scripts how every stream the client opens
 * misbehaves.
 */

/** Waits until the call is canceled: a stream that stays open but sends nothing. */
export const silence = (ctx: HandlerContext) =>
  new Promise<never>((_, reject) => {
    ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
  });

/** Reconnect delays of a few milliseconds: the scripts break streams on purpose. */
export const FAST_BACKOFF = { initialMs: 1, maxMs: 10 };

/** The first `count` values the iteration hands out, by `key`; then it leaves the loop. */
export async function take<T, K>(
  source: AsyncIterable<T>,
  count: number,
  key: (value: T) => K,
): Promise<K[]> {
  const taken: K[] = [];
  for await (const value of source) {
    taken.push(key(value));
    if (taken.length === count) break;
  }
  return taken;
}
