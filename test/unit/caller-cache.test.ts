import { describe, expect, it } from "vitest";
import type { Caller } from "../../server/caller.js";
import { createCallerCache } from "../../server/interceptors/caller-cache.js";

const caller = (id: number): Caller => ({
  id,
  teamId: 1,
  teamName: "t",
  name: `m${id}`,
  role: "teammate",
  lead: { id: 100, name: "team-lead", permissionMode: "default" },
});

describe("the caller cache of the auth interceptor", () => {
  it("serves a cached caller until its TTL, then asks the database again", () => {
    let now = 0;
    const cache = createCallerCache({ ttlMs: 1_000, maxEntries: 10, now: () => now });
    cache.set("a", caller(1), cache.epoch());
    now = 999;
    expect(cache.get("a")?.id).toBe(1);
    now = 1_000;
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("forgets a revoked member at once, and every token of it", () => {
    const cache = createCallerCache({ ttlMs: 60_000, maxEntries: 10 });
    cache.set("a", caller(1), cache.epoch());
    cache.set("b", caller(2), cache.epoch());
    cache.forgetMember(1);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("b")?.id).toBe(2);
  });

  it("a look-up that read the member before its revocation does not put it back", () => {
    const cache = createCallerCache({ ttlMs: 60_000, maxEntries: 10 });
    const epoch = cache.epoch(); // the look-up starts, reads "active"...
    cache.forgetMember(1); // ...the member is revoked meanwhile...
    cache.set("a", caller(1), epoch); // ...and the look-up finishes
    expect(cache.get("a")).toBeUndefined();
    // After a clear (missed notifications) likewise.
    const before = cache.epoch();
    cache.clear();
    cache.set("a", caller(1), before);
    expect(cache.get("a")).toBeUndefined();
  });

  it("holds at most maxEntries, dropping the oldest", () => {
    const cache = createCallerCache({ ttlMs: 60_000, maxEntries: 2 });
    for (const [i, key] of ["a", "b", "c"].entries()) cache.set(key, caller(i), cache.epoch());
    expect(cache.size).toBe(2);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("c")?.id).toBe(2);
  });

  it("a TTL of 0 caches nothing", () => {
    const cache = createCallerCache({ ttlMs: 0, maxEntries: 10 });
    cache.set("a", caller(1), cache.epoch());
    expect(cache.get("a")).toBeUndefined();
  });

  it("calls asking for one token while its look-up runs share that look-up's answer", async () => {
    const cache = createCallerCache({ ttlMs: 60_000, maxEntries: 10 });
    let lookUps = 0;
    let answer: (c: Caller) => void = () => {};
    const lookUp = () => {
      lookUps++;
      return new Promise<Caller>((resolve) => {
        answer = resolve;
      });
    };
    const asked = Array.from({ length: 16 }, () => cache.shared("a", cache.epoch(), lookUp));
    expect(lookUps).toBe(1);
    answer(caller(1));
    expect((await Promise.all(asked)).map((c) => c.id)).toEqual(Array(16).fill(1));
    // Done: the next call looks up again (what it finds is the cache's business).
    void cache.shared("a", cache.epoch(), lookUp);
    expect(lookUps).toBe(2);
  });

  it("a call that asks after a revocation does not share a look-up begun before it", async () => {
    const cache = createCallerCache({ ttlMs: 60_000, maxEntries: 10 });
    let lookUps = 0;
    const lookUp = () => {
      lookUps++;
      return new Promise<Caller>(() => {});
    };
    void cache.shared("a", cache.epoch(), lookUp); // reads the member as active...
    cache.forgetMember(1); // ...which is revoked meanwhile
    void cache.shared("a", cache.epoch(), lookUp);
    expect(lookUps).toBe(2);
    // A failed look-up is shared too, and then forgotten.
    const failing = () => {
      lookUps++;
      return Promise.reject(new Error("database gone"));
    };
    const b1 = cache.shared("b", cache.epoch(), failing);
    const b2 = cache.shared("b", cache.epoch(), failing);
    await expect(b1).rejects.toThrow("database gone");
    await expect(b2).rejects.toThrow("database gone");
    expect(lookUps).toBe(3);
    await expect(cache.shared("b", cache.epoch(), failing)).rejects.toThrow("database gone");
    expect(lookUps).toBe(4);
  });
});
