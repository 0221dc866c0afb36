import pg from "pg";
import type { Listener, ListenHandlers } from "./database.js";

const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5_000;

/**
 * LISTEN on its own connection (a pooled one would be handed to other queries), kept alive
 * across PostgreSQL restarts: when the connection drops it reconnects with backoff and
 * tells the caller, who must assume it missed notifications in between.
 */
export async function listenOn(
  connectionString: string,
  channel: string,
  handlers: ListenHandlers,
): Promise<Listener> {
  let client: pg.Client | undefined;
  let closed = false;
  let backoff = MIN_BACKOFF_MS;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (isReconnect: boolean): Promise<void> => {
    const c = new pg.Client({ connectionString, application_name: "team-protocols-listen" });
    c.on("notification", (msg) => {
      if (msg.channel === channel && msg.payload !== undefined)
        handlers.onNotification(msg.payload);
    });
    const lost = () => {
      if (client !== c) return;
      client = undefined;
      c.removeAllListeners("end");
      c.end().catch(() => {});
      scheduleReconnect();
    };
    c.on("error", lost);
    c.on("end", lost);
    await c.connect();
    // Channel names cannot be parameters; ours is a constant identifier, quoted anyway.
    await c.query(`LISTEN "${channel.replaceAll('"', '""')}"`);
    if (closed) {
      await c.end();
      return;
    }
    client = c;
    backoff = MIN_BACKOFF_MS;
    if (isReconnect) handlers.onReconnect();
  };

  const scheduleReconnect = () => {
    if (closed || retry) return;
    const delay = backoff * (0.5 + Math.random());
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    retry = setTimeout(() => {
      retry = undefined;
      connect(true).catch(() => scheduleReconnect());
    }, delay);
    retry.unref();
  };

  await connect(false);
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
