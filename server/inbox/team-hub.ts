import { createInboxHub, type Subscription } from "./hub.js";

/**
 * The WatchTeam streams of this process, and waking them after a commit stored events of
 * their team. Like the inbox hub, a wake-up carries no data: the woken stream reads the feed
 * from its cursor, so coalesced or late wake-ups lose nothing.
 *
 * Streams are kept in an inbox hub of their own, keyed by the watching member, so that
 * ending a member (RemoveMember, a revoked token) ends its watches the same way it ends its
 * subscriptions; this file adds which members watch which team.
 */
export interface TeamHub {
  /** Registers a stream of `memberId` watching `teamId`; `signal` (the call's) closes it. */
  open(teamId: number, memberId: number, signal: AbortSignal): Subscription;
  /** Wakes every stream watching these teams. */
  wake(teamIds: Iterable<number>): void;
  /** Wakes every stream (after notifications may have been missed). */
  wakeAll(): void;
  /** Ends the streams of one member: cleanly, or with `error`. */
  endMember(memberId: number, error?: Error): void;
  /** Ends every stream cleanly (graceful stop). */
  endAll(): void;
  /** Open streams in this process. */
  readonly size: number;
  /** Open streams of one member in this process. */
  countOf(memberId: number): number;
  /** Open streams watching one team in this process (all its members'). */
  countOfTeam(teamId: number): number;
  /** Streams parked waiting for a wake-up (read up to date): a test hook, as the inbox hub's. */
  readonly waiting: number;
}

export function createTeamHub(): TeamHub {
  const streams = createInboxHub();
  /** team -> watching member -> its open streams. */
  const watchers = new Map<number, Map<number, number>>();

  const add = (teamId: number, memberId: number, delta: 1 | -1) => {
    const members = watchers.get(teamId) ?? new Map<number, number>();
    const count = (members.get(memberId) ?? 0) + delta;
    if (count > 0) members.set(memberId, count);
    else members.delete(memberId);
    if (members.size > 0) watchers.set(teamId, members);
    else watchers.delete(teamId);
  };

  return {
    open(teamId, memberId, signal) {
      const subscription = streams.open(memberId, signal);
      add(teamId, memberId, 1);
      let counted = true;
      const forget = () => {
        if (!counted) return;
        counted = false;
        add(teamId, memberId, -1);
      };
      // The inner hub closes the subscription itself when the call's signal aborts.
      signal.addEventListener("abort", forget, { once: true });
      if (signal.aborted) forget();
      return {
        memberId,
        wait: (timeoutMs) => subscription.wait(timeoutMs),
        get endReason() {
          return subscription.endReason;
        },
        close() {
          forget();
          subscription.close();
        },
      };
    },
    wake(teamIds) {
      for (const teamId of teamIds) {
        const members = watchers.get(teamId);
        if (members) streams.wake(members.keys());
      }
    },
    wakeAll: () => streams.wakeAll(),
    endMember: (memberId, error) => streams.endMember(memberId, error),
    endAll: () => streams.endAll(),
    get size() {
      return streams.size;
    },
    countOf: (memberId) => streams.countOf(memberId),
    countOfTeam(teamId) {
      let n = 0;
      for (const count of watchers.get(teamId)?.values() ?? []) n += count;
      return n;
    },
    get waiting() {
      return streams.waiting;
    },
  };
}
