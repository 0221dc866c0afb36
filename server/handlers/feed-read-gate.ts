/**
 * At most `limit` holders at once; the rest wait their turn in order, without a timeout.
 * WatchTeam's page reads pass through one: hundreds of feeds opened at once otherwise each
 * ran a page query together, which on PostgreSQL queued them all for a pool connection
 * (those that waited past DB_CONNECT_TIMEOUT_MS ended Unavailable, and calls waited behind
 * them), and on the embedded database ran them back to back on the one backend without the
 * event loop getting a turn. Waiting here costs a feed nothing but time, and a pool
 * connection is left for everything else.
 */
export class ReadGate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** Runs `work` once a place is free. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      // The place passes straight to the next in line (active stays counted).
      if (next) next();
      else this.active--;
    }
  }

  /** Holders now (for tests and metrics). */
  get inUse(): number {
    return this.active;
  }
}
