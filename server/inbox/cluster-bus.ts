import { randomUUID } from "node:crypto";
import { DomainError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Database, Listener } from "../store/database.js";
import type { InboxHub } from "./hub.js";
import type { RequestWaiters } from "./request-waiters.js";
import type { TeamHub } from "./team-hub.js";

export const CHANNEL = "team_protocols_live";

/**
 * What one server process tells the others after a commit. Ids only: a receiver re-reads
 * the database, so a lost or late event costs latency, never a message.
 */
interface LiveEvent {
  /** The sending process (its own events come back to it and are ignored). */
  o: string;
  /** Inboxes with new messages. */
  w?: number[];
  /** Members whose streams end: [member id, error message or "" for a clean end]. */
  e?: [number, string][];
  /** Requests that left pending. */
  r?: string[];
  /** Teams whose feed has new events (WatchTeam). */
  t?: number[];
}

// NOTIFY payloads are limited to 8000 bytes: events are cut into pieces well below that.
const MAX_IDS_PER_EVENT = 500;

export interface ClusterBus {
  /** Resolves once this process listens (at once on the embedded database). */
  readonly ready: Promise<void>;
  /** The hub to use everywhere: local wake-ups, also published to the other processes. */
  readonly hub: InboxHub;
  /** The same for AwaitRequest waiters. */
  readonly waiters: RequestWaiters;
  /** The same for WatchTeam streams. */
  readonly teams: TeamHub;
  close(): Promise<void>;
}

/**
 * Live fan-out across server processes sharing one PostgreSQL (LISTEN/NOTIFY). Local
 * effects happen at once; what other processes must know is queued and published with
 * one NOTIFY statement per flush, never inside a send's transaction: a NOTIFY takes a
 * cluster-wide lock at commit, and one per send would cost about two thirds of the
 * commit rate. While one flush is in flight the next batch collects, so under load the
 * batches grow instead of the number of NOTIFYs. On the embedded database (one process
 * only) nothing is published.
 */
export function createClusterBus(options: {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  teams: TeamHub;
  logger: Logger;
  /** A member's streams ended (revoked), here or in another process: forget its token. */
  onMemberEnded?: (memberId: number) => void;
  /** Events from other processes may have been missed (the listener reconnected). */
  onMissedEvents?: () => void;
}): ClusterBus {
  const { db, hub: local, waiters: localWaiters, teams: localTeams, logger } = options;
  const memberEnded = options.onMemberEnded ?? (() => {});
  const origin = randomUUID();
  let listener: Listener | undefined;
  const pending = {
    w: new Set<number>(),
    e: new Map<number, string>(),
    r: new Set<string>(),
    t: new Set<number>(),
  };
  const pendingCount = () => pending.w.size + pending.e.size + pending.r.size + pending.t.size;
  let flushing: Promise<void> | undefined;
  let scheduled = false;

  const receive = (payload: string) => {
    let event: LiveEvent;
    try {
      event = JSON.parse(payload) as LiveEvent;
    } catch {
      return;
    }
    if (event.o === origin) return;
    if (event.w) local.wake(event.w);
    if (event.t) localTeams.wake(event.t);
    for (const [id, message] of event.e ?? []) {
      memberEnded(id);
      const error = message ? new DomainError("unauthenticated", message) : undefined;
      local.endMember(id, error);
      localTeams.endMember(id, error);
    }
    for (const id of event.r ?? []) localWaiters.notify(id);
  };

  let closed = false;
  const ready = (async () => {
    if (!db.listen) return;
    const l = await db.listen(CHANNEL, {
      onNotification: receive,
      // Events sent while the connection was down are lost: every stream and every
      // AwaitRequest waiter re-reads.
      onReconnect: () => {
        options.onMissedEvents?.();
        local.wakeAll();
        localTeams.wakeAll();
        localWaiters.notifyAll();
      },
    });
    if (closed) await l.close();
    else listener = l;
  })();

  const takeBatch = (): string[] => {
    const ids = { w: [...pending.w], e: [...pending.e], r: [...pending.r], t: [...pending.t] };
    pending.w.clear();
    pending.e.clear();
    pending.r.clear();
    pending.t.clear();
    const payloads: string[] = [];
    for (
      let i = 0;
      i < Math.max(ids.w.length, ids.e.length, ids.r.length, ids.t.length);
      i += MAX_IDS_PER_EVENT
    ) {
      const event: LiveEvent = { o: origin };
      const w = ids.w.slice(i, i + MAX_IDS_PER_EVENT);
      const e = ids.e.slice(i, i + MAX_IDS_PER_EVENT);
      const r = ids.r.slice(i, i + MAX_IDS_PER_EVENT);
      const t = ids.t.slice(i, i + MAX_IDS_PER_EVENT);
      if (w.length) event.w = w;
      if (e.length) event.e = e;
      if (r.length) event.r = r;
      if (t.length) event.t = t;
      payloads.push(JSON.stringify(event));
    }
    return payloads;
  };

  const flush = async (): Promise<void> => {
    while (pendingCount() > 0) {
      const payloads = takeBatch();
      try {
        await db.query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", [CHANNEL, payloads]);
      } catch (err) {
        // Other processes' subscribers catch up at their next heartbeat re-read.
        logger.warn({ event: "notify_failed", err }, "could not publish live events");
      }
    }
  };

  const schedule = () => {
    if (!listener || scheduled || flushing) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flushing = flush().finally(() => {
        flushing = undefined;
        if (pendingCount() > 0) schedule();
      });
    });
  };

  const hub: InboxHub = {
    open: (memberId, signal) => local.open(memberId, signal),
    wake(memberIds) {
      const ids = [...memberIds];
      local.wake(ids);
      for (const id of ids) pending.w.add(id);
      schedule();
    },
    wakeAll: () => local.wakeAll(),
    // A member's WatchTeam streams end with its subscriptions (a removed observer, a
    // revoked lead token), here and in every other process.
    endMember(memberId, error) {
      memberEnded(memberId);
      local.endMember(memberId, error);
      localTeams.endMember(memberId, error);
      pending.e.set(memberId, error?.message ?? "");
      schedule();
    },
    endAll: () => {
      local.endAll();
      localTeams.endAll();
    },
    get size() {
      return local.size;
    },
    countOf: (memberId) => local.countOf(memberId),
    memberIds: () => local.memberIds(),
    get waiting() {
      return local.waiting;
    },
  };

  const waiters: RequestWaiters = {
    wait: (id, timeoutMs, signal) => localWaiters.wait(id, timeoutMs, signal),
    notifyAll: () => localWaiters.notifyAll(),
    close: () => localWaiters.close(),
    get closed() {
      return localWaiters.closed;
    },
    get size() {
      return localWaiters.size;
    },
    notify(id) {
      localWaiters.notify(id);
      pending.r.add(id);
      schedule();
    },
  };

  const teams: TeamHub = {
    open: (teamId, memberId, signal) => localTeams.open(teamId, memberId, signal),
    wake(teamIds) {
      const ids = [...teamIds];
      localTeams.wake(ids);
      for (const id of ids) pending.t.add(id);
      schedule();
    },
    wakeAll: () => localTeams.wakeAll(),
    endMember: (memberId, error) => hub.endMember(memberId, error),
    endAll: () => localTeams.endAll(),
    get size() {
      return localTeams.size;
    },
    countOf: (memberId) => localTeams.countOf(memberId),
    countOfTeam: (teamId) => localTeams.countOfTeam(teamId),
    get waiting() {
      return localTeams.waiting;
    },
  };

  return {
    ready,
    hub,
    waiters,
    teams,
    async close() {
      closed = true;
      await ready.catch(() => {});
      await flushing;
      await listener?.close();
    },
  };
}
