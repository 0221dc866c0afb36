import type { App } from "../../server/app.js";
import { waitFor } from "./wait.js";

/**
 * How long these waits give up after: short of the 30 s test timeout, so that a hook that
 * never moves fails with what was awaited instead of "Test timed out". A bound on a hang,
 * not on speed.
 */
const GIVE_UP_MS = 20_000;

async function until(what: string, done: () => boolean, state: () => string): Promise<void> {
  await waitFor(what, done, { timeoutMs: GIVE_UP_MS, intervalMs: 5 }).catch((err: Error) => {
    throw new Error(`${err.message} (${state()})`);
  });
}

/**
 * Resolves once more than `before` subscriptions of `app` are parked waiting for a wake-up
 * (hub.waiting): such a stream has read its backlog, so a message sent from then on can
 * only reach it live. Tests wait for this event instead of sleeping and hoping. Pass the
 * count read before opening the stream.
 */
export async function subscribedBeyond(app: App, before: number): Promise<void> {
  await until(
    `more than ${before} parked subscriptions`,
    () => app.hub.waiting > before,
    () => `hub.waiting is ${app.hub.waiting}`,
  );
}

/** Resolves once `app` holds at most `count` open subscriptions (a stream was released). */
export async function subscriptionsAtMost(app: App, count: number): Promise<void> {
  await until(
    `at most ${count} open subscriptions`,
    () => app.hub.size <= count,
    () => `hub.size is ${app.hub.size}`,
  );
}

/** Resolves once more than `before` AwaitRequest callers wait in `app` (a caller is parked). */
export async function awaitingBeyond(app: App, before: number): Promise<void> {
  await until(
    `more than ${before} parked AwaitRequest callers`,
    () => app.waiters.size > before,
    () => `app.waiters.size is ${app.waiters.size}`,
  );
}

/** Resolves once at most `count` AwaitRequest callers wait in `app` (a waiter was released). */
export async function awaitingAtMost(app: App, count: number): Promise<void> {
  await until(
    `at most ${count} parked AwaitRequest callers`,
    () => app.waiters.size <= count,
    () => `app.waiters.size is ${app.waiters.size}`,
  );
}
