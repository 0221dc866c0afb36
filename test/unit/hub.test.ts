import { describe, expect, it } from "vitest";
import { createInboxHub } from "../../server/inbox/hub.js";

describe("inbox hub (in-process wake-ups)", () => {
  it("counts a wake that arrives before the wait, so a commit during a read is not missed", async () => {
    const hub = createInboxHub();
    const sub = hub.open(1, new AbortController().signal);
    hub.wake([1]);
    expect(await sub.wait(10_000)).toBe("wake");
    // One wake is consumed once: the next wait times out.
    expect(await sub.wait(20)).toBe("timeout");
  });

  it("wakes only the subscriptions of the inboxes named", async () => {
    const hub = createInboxHub();
    const a = hub.open(1, new AbortController().signal);
    const b = hub.open(2, new AbortController().signal);
    const waits = [a.wait(200), b.wait(200)];
    hub.wake([2]);
    expect(await Promise.all(waits)).toEqual(["timeout", "wake"]);
  });

  it("ends one member's subscriptions with an error, and all cleanly at stop", async () => {
    const hub = createInboxHub();
    const a = hub.open(1, new AbortController().signal);
    const b = hub.open(2, new AbortController().signal);
    const waitA = a.wait(10_000);
    hub.endMember(1, new Error("removed"));
    expect(await waitA).toBe("ended");
    expect(a.endReason?.error?.message).toBe("removed");
    hub.endAll();
    expect(await b.wait(10_000)).toBe("ended");
    expect(b.endReason).toEqual({});
  });

  it("forgets a subscription when its call is aborted", async () => {
    const hub = createInboxHub();
    const call = new AbortController();
    const sub = hub.open(7, call.signal);
    expect(hub.size).toBe(1);
    const waiting = sub.wait(10_000);
    call.abort();
    expect(await waiting).toBe("ended");
    expect(hub.size).toBe(0);
  });
});
