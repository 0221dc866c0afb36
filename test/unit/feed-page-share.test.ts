import { describe, expect, it } from "vitest";
import {
  FeedPageReads,
  PageClaim,
  type PageRequest,
  SharedPage,
} from "../../server/handlers/feed-page-share.js";
import { ReadGate } from "../../server/handlers/feed-read-gate.js";
import type { FeedEvent, FeedPage } from "../../server/store/team-feed.js";

/**
 * A shared WatchTeam page (handlers/feed-page-share.ts): which page requests share one read,
 * and that the page lets an event go once no sharer may still write it, so a sharer that
 * stopped (its client stopped reading) holds none of it while another one goes on.
 */

function envelopeEvent(position: number, bytes: number): FeedEvent {
  return {
    source: "envelope",
    position: BigInt(position),
    at: new Date(0),
    recipient: "worker",
    seq: BigInt(position),
    fromName: "lead",
    toName: "worker",
    requestId: "",
    messageId: "",
    body: new Uint8Array(bytes),
    envelopeId: "",
    threadId: "",
    replyTo: "",
  };
}

const page = (): FeedPage => ({
  events: [envelopeEvent(1, 10), envelopeEvent(2, 20), envelopeEvent(3, 30)],
  upto: "5:5:",
  more: false,
});

const request = (after: bigint): PageRequest => ({
  teamId: 1,
  teamName: "t",
  window: { since: "1:1:", after },
  limit: 256,
  maxBytes: 32 * 1024,
});

describe("a shared WatchTeam page", () => {
  it("keeps an event while a sharer may still write it; a sharer that lets go holds none", () => {
    let held = 0;
    let made = 0;
    const shared = new SharedPage<string>(page(), 2, (d) => {
      held += d;
    });
    const reading = new PageClaim(shared);
    const stalled = new PageClaim(shared);
    const make = (e: FeedEvent) => {
      made++;
      return `event ${e.position}`;
    };
    expect(held).toBe(60);
    expect(stalled.take(make)).toBe("event 1");
    // The stalled sharer lets go of the rest: the reading one still needs all three.
    stalled.letGo();
    expect(held).toBe(60);
    expect(reading.take(make)).toBe("event 1");
    expect(held).toBe(50);
    expect([reading.take(make), reading.take(make)]).toEqual(["event 2", "event 3"]);
    expect(held).toBe(0);
    // Made once per event, whichever sharer got to it first.
    expect(made).toBe(3);
    expect(reading.remaining).toBe(0);
    reading.letGo();
    expect(held).toBe(0);
  });

  it("requests made before the read starts share it; one made after reads anew", async () => {
    let reads = 0;
    const shares = new FeedPageReads<string>(new ReadGate(4), async () => {
      reads++;
      return page();
    });
    const [a, b] = await Promise.all([shares.claim(request(0n)), shares.claim(request(0n))]);
    expect(reads).toBe(1);
    expect(a.page).toBe(b.page);
    // Another position is another page.
    const [c] = await Promise.all([shares.claim(request(0n)), shares.claim(request(2n))]);
    expect(reads).toBe(3);
    expect(c.page).not.toBe(a.page);
    for (const claim of [a, b, c]) claim.letGo();
    expect(shares.waitingReads).toBe(0);
  });
});
