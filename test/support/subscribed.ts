import type { App } from "../../server/app.js";

/**
 * Resolves once `app` holds more than `before` open subscriptions: a stream counted there
 * is registered with the hub (before its first read), so whatever is sent from then on
 * reaches it live. Tests wait for this event instead of sleeping and hoping.
 */
export async function subscribedBeyond(app: App, before: number): Promise<void> {
  while (app.hub.size <= before) await new Promise((r) => setTimeout(r, 5));
}

/** Resolves once `app` holds at most `count` open subscriptions (a stream was released). */
export async function subscriptionsAtMost(app: App, count: number): Promise<void> {
  while (app.hub.size > count) await new Promise((r) => setTimeout(r, 5));
}

/** Resolves once more than `before` AwaitRequest callers wait in `app` (a caller is parked). */
export async function awaitingBeyond(app: App, before: number): Promise<void> {
  while (app.waiters.size <= before) await new Promise((r) => setTimeout(r, 5));
}
