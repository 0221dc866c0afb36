import type { FeedEvent, FeedPage, FeedWindow } from "../store/team-feed.js";
import type { ReadGate } from "./feed-read-gate.js";

/**
 * WatchTeam page reads shared between the streams of one team that ask for the same page
 * (same window, same position, same limits) while a read of it still waits to go to the
 * database. Feeds opened together mostly ask for the same first page: read once, each
 * event's response made once, and the page let go event by event once no sharer may still
 * write it.
 *
 * Only a read that has not started is joined: its snapshot is then taken after the joining
 * stream registered for wake-ups, as if the stream had read alone (watch.ts: a commit
 * cannot fall between a read and the wait). A read waits one turn of the event loop before
 * it asks the gate for a place, so that streams opened in the same burst find it.
 */

export interface PageRequest {
  teamId: number;
  /** Part of what a response says, so part of what must agree to share one. */
  teamName: string;
  window: FeedWindow;
  limit: number;
  maxBytes: number;
}

export interface PageShareEvents {
  /** Body bytes held by pages in memory: + when a page is read, - as events are let go. */
  held?: ((delta: number) => void) | undefined;
  /** A stream got its page: read from the database for it, or joined to a waiting read. */
  page?: ((source: "database" | "shared") => void) | undefined;
}

interface WaitingRead<R> {
  sharers: number;
  page: Promise<SharedPage<R>>;
}

export class FeedPageReads<R> {
  private readonly waiting = new Map<string, WaitingRead<R>>();

  constructor(
    private readonly gate: ReadGate,
    private readonly read: (request: PageRequest) => Promise<FeedPage>,
    private readonly events: PageShareEvents = {},
  ) {}

  /** This stream's claim on the page `request` names; it must be let go (PageClaim.letGo). */
  async claim(request: PageRequest): Promise<PageClaim<R>> {
    const key = keyOf(request);
    const joined = this.waiting.get(key);
    if (joined) {
      joined.sharers++;
      this.events.page?.("shared");
      return new PageClaim(await joined.page);
    }
    const read: WaitingRead<R> = { sharers: 1, page: undefined as never };
    this.waiting.set(key, read);
    this.events.page?.("database");
    read.page = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.gate.run(async () => {
        // Started: from here on a stream asking for this page reads it anew.
        if (this.waiting.get(key) === read) this.waiting.delete(key);
        // A failed read fails every sharer; none then holds a claim.
        const page = await this.read(request);
        return new SharedPage<R>(page, read.sharers, this.events.held);
      }),
    );
    return new PageClaim(await read.page);
  }

  /** Reads waiting to start, for tests. */
  get waitingReads(): number {
    return this.waiting.size;
  }
}

function keyOf({ teamId, teamName, window, limit, maxBytes }: PageRequest): string {
  return `${teamId}\n${teamName}\n${window.since}\n${window.upto ?? ""}\n${window.after ?? ""}\n${limit}\n${maxBytes}`;
}

/**
 * One read page and its sharers: each event (and the response made of it) is kept while a
 * sharer may still write it, and let go when the last one took it or let go of the rest.
 */
export class SharedPage<R> {
  readonly upto: string;
  readonly more: boolean;
  readonly length: number;
  private readonly events: (FeedEvent | undefined)[];
  private readonly positions: bigint[];
  private readonly made: (R | undefined)[];
  /** For each event: sharers that may still write it. */
  private readonly claims: number[];

  constructor(
    page: FeedPage,
    sharers: number,
    private readonly held: ((delta: number) => void) | undefined,
  ) {
    this.upto = page.upto;
    this.more = page.more;
    this.length = page.events.length;
    this.events = page.events;
    this.positions = page.events.map((e) => e.position);
    this.made = [];
    this.claims = page.events.map(() => sharers);
    if (held) {
      let bytes = 0;
      for (const e of page.events) bytes += feedEventBytes(e);
      if (bytes !== 0) held(bytes);
    }
  }

  positionAt(i: number): bigint {
    return this.positions[i] as bigint;
  }

  /** Event i as `make` turns it into a response, made once for every sharer. */
  responseAt(i: number, make: (event: FeedEvent) => R): R {
    let response = this.made[i];
    if (response === undefined) {
      response = make(this.events[i] as FeedEvent);
      this.made[i] = response;
    }
    return response;
  }

  /** A sharer will not write event i (it did, or it let go of it). */
  unclaim(i: number): void {
    const left = (this.claims[i] as number) - 1;
    this.claims[i] = left;
    if (left > 0) return;
    const event = this.events[i];
    this.events[i] = undefined;
    this.made[i] = undefined;
    if (this.held && event) {
      const bytes = feedEventBytes(event);
      if (bytes !== 0) this.held(-bytes);
    }
  }
}

/** One stream's way through a shared page, in order. */
export class PageClaim<R> {
  /** The next event this stream writes. */
  private next = 0;
  /** Events from here on are let go. */
  private end: number;

  constructor(readonly page: SharedPage<R>) {
    this.end = page.length;
  }

  /** Events this stream still has to write. */
  get remaining(): number {
    return this.end - this.next;
  }

  /** The index of the next event (events before it were taken). */
  get taken(): number {
    return this.next;
  }

  nextPosition(): bigint {
    return this.page.positionAt(this.next);
  }

  /** The next event's response; this stream's claim on it ends. */
  take(make: (event: FeedEvent) => R): R {
    const i = this.next++;
    const response = this.page.responseAt(i, make);
    this.page.unclaim(i);
    return response;
  }

  /** Lets go of every event not taken yet (the stream is blocked, or ended). */
  letGo(): void {
    for (let i = this.next; i < this.end; i++) this.page.unclaim(i);
    this.end = this.next;
  }
}

/** The bytes of bodies an event carries (what dominates a page's memory). */
export function feedEventBytes(event: FeedEvent): number {
  switch (event.source) {
    case "envelope":
      return event.body.byteLength;
    case "request":
      return event.request.requestBody.byteLength + (event.request.responseBody?.byteLength ?? 0);
    case "task":
      return event.task.subject.length + event.task.description.length;
    case "member":
      return 0;
  }
}
