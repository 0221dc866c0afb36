/**
 * Waiting in tests, in one place: a pause, a condition polled until it holds, an assertion
 * retried until it passes. Every wait has a deadline and its failure says what it waited
 * for, so a hung test names its cause instead of running into vitest's timeout.
 */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface WaitOptions {
  /** Gives up after this long (default 10 s). */
  timeoutMs?: number;
  /** Polls this often (default 20 ms). */
  intervalMs?: number;
}

/**
 * Polls `check` until it returns something other than undefined, null or false, and hands
 * that back; throws "timed out waiting for <what>" at the deadline.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 10_000, intervalMs = 20 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * Runs `assertion` (expect() calls) until it stops throwing, and hands back its value; at
 * the deadline rethrows its last failure, so the report shows the expected and actual values.
 */
export async function eventually<T>(
  assertion: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 20 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await assertion();
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(intervalMs);
  }
}
