/**
 * Live fan-out: which inboxes have open subscriptions in this process, and waking them
 * after a commit. A wake-up carries no data: the woken subscription reads its inbox from
 * the database after its cursor, so a wake-up can be coalesced or arrive late without any
 * message being lost or reordered.
 */

/** Why a subscription's wait returned. */
export type WaitResult = "wake" | "timeout" | "ended";

export interface Subscription {
  readonly memberId: number;
  /**
   * Resolves when the inbox may have new messages (or had since the last wait began), when
   * `timeoutMs` passes, or when the subscription is ended.
   */
  wait(timeoutMs: number): Promise<WaitResult>;
  /** Set once ended: undefined for a clean end (server stopping), or the error to raise. */
  readonly endReason: { error?: Error } | undefined;
  /** Unregisters the subscription. */
  close(): void;
}

export interface InboxHub {
  /** Registers a subscription for an inbox; `signal` (the call's) closes it. */
  open(memberId: number, signal: AbortSignal): Subscription;
  /** Wakes every subscription of these inboxes. */
  wake(memberIds: Iterable<number>): void;
  /** Wakes every subscription (after notifications may have been missed). */
  wakeAll(): void;
  /** Ends the subscriptions of one member: cleanly, or with `error`. */
  endMember(memberId: number, error?: Error): void;
  /** Ends every subscription cleanly (graceful stop). */
  endAll(): void;
  /** Open subscriptions in this process. */
  readonly size: number;
  /** Open subscriptions of one member in this process. */
  countOf(memberId: number): number;
  /** The members with an open subscription in this process (presence sees them as online). */
  memberIds(): number[];
  /**
   * Subscriptions parked in wait() (read up to date, waiting for a wake-up): a test hook, so
   * that a test sends only once a stream can receive the message live, not as backlog.
   */
  readonly waiting: number;
}

class SubscriptionImpl implements Subscription {
  private woken = false;
  private resolveWait: ((r: WaitResult) => void) | undefined;
  endReason: { error?: Error } | undefined;

  constructor(
    readonly memberId: number,
    private readonly onClose: (s: SubscriptionImpl) => void,
    private readonly onPark: (delta: 1 | -1) => void,
  ) {}

  wake(): void {
    this.woken = true;
    this.settle("wake");
  }

  end(error?: Error): void {
    if (this.endReason) return;
    this.endReason = error ? { error } : {};
    this.settle("ended");
  }

  wait(timeoutMs: number): Promise<WaitResult> {
    if (this.endReason) return Promise.resolve("ended");
    // A wake that arrived while the caller was reading counts: it may be for a row the
    // read did not see yet.
    if (this.woken) {
      this.woken = false;
      return Promise.resolve("wake");
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle("timeout"), timeoutMs);
      this.onPark(1);
      this.resolveWait = (r) => {
        clearTimeout(timer);
        this.onPark(-1);
        if (r === "wake") this.woken = false;
        resolve(r);
      };
    });
  }

  close(): void {
    this.end();
    this.onClose(this);
  }

  private settle(r: WaitResult): void {
    const resolve = this.resolveWait;
    this.resolveWait = undefined;
    resolve?.(r);
  }
}

export function createInboxHub(): InboxHub {
  const byMember = new Map<number, Set<SubscriptionImpl>>();
  let size = 0;
  let waiting = 0;
  const park = (delta: 1 | -1) => {
    waiting += delta;
  };

  const remove = (s: SubscriptionImpl) => {
    const set = byMember.get(s.memberId);
    if (set?.delete(s)) {
      size--;
      if (set.size === 0) byMember.delete(s.memberId);
    }
  };

  return {
    open(memberId, signal) {
      const sub = new SubscriptionImpl(memberId, remove, park);
      const set = byMember.get(memberId) ?? new Set();
      byMember.set(memberId, set);
      set.add(sub);
      size++;
      if (signal.aborted) sub.close();
      else signal.addEventListener("abort", () => sub.close(), { once: true });
      return sub;
    },
    wake(memberIds) {
      for (const id of memberIds) {
        const set = byMember.get(id);
        if (set) for (const sub of set) sub.wake();
      }
    },
    wakeAll() {
      for (const set of byMember.values()) for (const sub of set) sub.wake();
    },
    endMember(memberId, error) {
      for (const sub of byMember.get(memberId) ?? []) sub.end(error);
    },
    endAll() {
      for (const set of byMember.values()) for (const sub of set) sub.end();
    },
    get size() {
      return size;
    },
    countOf(memberId) {
      return byMember.get(memberId)?.size ?? 0;
    },
    memberIds() {
      return [...byMember.keys()];
    },
    get waiting() {
      return waiting;
    },
  };
}
