import pg from "pg";
import type { Listener, ListenHandlers } from "./database.js";
import type { DatabaseHost } from "./database-url.js";
import { probeReadOnly } from "./find-primary.js";

const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5_000;

/** Where the listener connects: the writable primary, as the database's pool knows it. */
export interface ListenSource {
  /** The primary now (searched for when none is known); `lost` reports an error seen on it. */
  primary(): Promise<{ host: DatabaseHost; lost(err: unknown): void }>;
  /** Calls `fn` when the pool moves to another primary. Returns an unsubscribe. */
  onSwitch(fn: (host: DatabaseHost) => void): () => void;
  /** Settings of the listening connection besides where it goes (keepalive, timeouts). */
  client: Omit<pg.ClientConfig, "connectionString">;
  /**
   * How often the idle connection is asked whether its server is still the writable
   * primary: a silent partition, or a server demoted without dropping its sessions, would
   * otherwise leave us listening where nobody sends.
   */
  checkIntervalMs: number;
  /** An answer to that check slower than this counts as a lost connection. */
  checkTimeoutMs: number;
}

/**
 * LISTEN on its own connection (a pooled one would be handed to other queries), kept on the
 * writable primary: LISTEN fails on a standby ("cannot execute LISTEN during recovery"), and
 * NOTIFY is only ever sent on the primary. When the connection drops, its server turns
 * read-only, or the pool switches primaries, it reconnects with backoff to the primary and
 * tells the caller, who must assume it missed notifications in between.
 */
export async function listenOn(
  source: ListenSource,
  channel: string,
  handlers: ListenHandlers,
): Promise<Listener> {
  let client: pg.Client | undefined;
  let clientHost: DatabaseHost | undefined;
  let closed = false;
  let backoff = MIN_BACKOFF_MS;
  let retry: NodeJS.Timeout | undefined;

  const drop = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    clientHost = undefined;
    c.removeAllListeners("end");
    c.end().catch(() => {});
    scheduleReconnect();
  };

  const connect = async (isReconnect: boolean): Promise<void> => {
    const target = await source.primary();
    const c = new pg.Client({
      ...source.client,
      connectionString: target.host.url,
      application_name: "team-protocols-listen",
    });
    c.on("notification", (msg) => {
      if (msg.channel === channel && msg.payload !== undefined)
        handlers.onNotification(msg.payload);
    });
    c.on("error", () => drop(c));
    c.on("end", () => drop(c));
    try {
      await c.connect();
      // Channel names cannot be parameters; ours is a constant identifier, quoted anyway.
      await c.query(`LISTEN "${channel.replaceAll('"', '""')}"`);
    } catch (err) {
      target.lost(err); // a standby ("cannot execute LISTEN during recovery"): search again
      c.removeAllListeners("end");
      await c.end().catch(() => {});
      throw err;
    }
    if (closed) {
      await c.end();
      return;
    }
    client = c;
    clientHost = target.host;
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

  // The pool found another primary: listen there, whatever this connection still says.
  const unsubscribe = source.onSwitch((host) => {
    if (client && clientHost?.url !== host.url) drop(client);
  });

  const check = setInterval(() => {
    const c = client;
    if (!c) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), source.checkTimeoutMs);
    });
    void Promise.race([probeReadOnly(c), timedOut])
      .then(
        (answer) => answer !== false, // read-only, or no answer in time
        () => true,
      )
      .then((moveOn) => {
        clearTimeout(timer);
        if (moveOn) drop(c);
      });
  }, source.checkIntervalMs);
  check.unref();

  try {
    await connect(false);
  } catch (err) {
    clearInterval(check);
    unsubscribe();
    throw err;
  }
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      clearInterval(check);
      unsubscribe();
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
