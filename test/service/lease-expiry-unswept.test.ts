import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { LeaseMode } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import { inbox, refused } from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";
import { sleep, waitFor } from "../support/wait.js";

/**
 * A lease holds nothing once its ttl has passed, whether or not the sweeper has deleted it
 * yet: here the sweeper runs only when the test says (its timer is an hour), so the lapsed
 * row is still stored while acquire, renew, ListLeases and the hooks' ListLeases filter meet
 * it. Then one sweep deletes it and tells the holder, on a stream it holds open.
 */
describeEachDatabase(
  "a lapsed lease the sweeper has not reached",
  (env) => {
    it("holds nothing, lists as nothing, cannot be renewed; the sweep then tells its holder's open stream once", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const { lease } = await alice.acquireLease({
        resource: "src/**",
        mode: LeaseMode.EXCLUSIVE,
      });
      const id = lease?.leaseId ?? "";
      await sleep(500);
      const stored = async () =>
        (
          await env().db.query<{ n: bigint }>(
            "SELECT count(*) AS n FROM leases WHERE lease_id = $1",
            [id],
          )
        )[0]?.n;
      expect(await stored()).toBe(1n);

      expect((await t.lead.listLeases({})).leases).toEqual([]);
      expect((await t.lead.listLeases({ resource: "src/a.ts" })).leases).toEqual([]);
      expect((await refused(() => alice.renewLease({ leaseId: id }))).code).toBe(Code.NotFound);
      const bobs = await t.member("bob").client.acquireLease({
        resource: "src/a.ts",
        mode: LeaseMode.EXCLUSIVE,
        ttlSeconds: 60,
      });
      expect(bobs.lease?.holder).toBe("bob");
      expect(await stored()).toBe(1n);
      expect((await inbox(alice)).filter((e) => e.from === "")).toEqual([]);

      // alice holds her inbox stream open; one sweep deletes the row and wakes the stream.
      const before = env().app.hub.waiting;
      const abort = new AbortController();
      const seen: string[] = [];
      const reading = (async () => {
        try {
          for await (const r of alice.subscribe({}, { signal: abort.signal })) {
            if (r.event.case !== "envelope") continue;
            const text = r.event.value.message?.kind.value;
            if (r.event.value.from === "" && typeof text === "string") seen.push(text);
          }
        } catch {
          // Aborted at the end of the test.
        }
      })();
      await subscribedBeyond(env().app, before);
      await env().app.sweeper.sweep();
      expect(await stored()).toBe(0n);
      await waitFor("the expiry notice on alice's stream", () => seen.length > 0);
      expect(seen).toEqual([
        expect.stringMatching(
          new RegExp(`^Your exclusive lease ${id} on "src/\\*\\*" expired at `),
        ),
      ]);
      await env().app.sweeper.sweep();
      expect((await inbox(alice)).filter((e) => e.from === "")).toHaveLength(1);
      abort.abort();
      await reading;
    });
  },
  { leaseTtls: { defaultMs: 300, maxMs: 120_000 }, sweepIntervalMs: 3_600_000 },
);
