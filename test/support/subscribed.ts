import type { App } from "../../server/app.js";

/**
 * Resolves once more than `before` subscriptions of `app` are parked waiting for a wake-up
 * (hub.waiting): such a stream has read its backlog, so a message sent from then on can
 * only reach it live. Tests wait for this event instead of sleeping and hoping. Pass the
 * count read before opening the stream.
 */
export async function subscribedBeyond(app: App, before: number): Promise<void> {
  while (app.hub.waiting <= before) await new Promise((r) => setTimeout(r, 5));
}

/** Resolves once `app` holds at most `count` open subscriptions (a stream was released). */
export async function subscriptionsAtMost(app: App, count: number): Promise<void> {
  while (app.hub.size > count) await new Promise((r) => setTimeout(r, 5));
}

/** Resolves once more than `before` AwaitRequest callers wait in `app` (a caller is parked). */
export async function awaitingBeyond(app: App, before: number): Promise<void> {
  while (app.waiters.size <= before) await new Promise((r) => setTimeout(r, 5));
}
