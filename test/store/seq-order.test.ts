import { expect, it } from "vitest";
import { readInbox } from "../../server/store/inbox.js";
import { sendMessage } from "../../server/store/send.js";
import { describeEachStore, insertTeam } from "../support/sql-fixtures.js";
import { sleep } from "../support/wait.js";

describeEachStore("seq allocation", (db) => {
  it("every read of an inbox is a gap-free prefix while senders race with slow commits", async () => {
    const senders = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"];
    const t = await insertTeam(db(), senders);
    const lead = t.lead;
    const perSender = 15;
    let done = false;
    let reads = 0;
    const violations: string[] = [];
    const reader = (async () => {
      while (!done) {
        const seen = await readInbox(db(), lead.id, 0n, 10_000);
        reads++;
        seen.forEach((m, i) => {
          if (m.seq !== BigInt(i + 1))
            violations.push(`read ${reads}: position ${i} holds seq ${m.seq}`);
        });
        await sleep(1);
      }
    })();
    await Promise.all(
      senders
        .map((n) => t.member(n))
        .map(async (sender) => {
          for (let i = 0; i < perSender; i++) {
            await sendMessage(db(), {
              teamId: sender.teamId,
              sender: { id: sender.id, name: sender.name },
              to: "team-lead",
              kind: "text",
              body: new Uint8Array([10, 1, 120]),
              // Hold the transaction open a random while after taking the seq, so that
              // commits would land out of order if seqs were not ordered by the inbox lock.
              beforeCommit: () => sleep(Math.random() * 8),
            });
          }
        }),
    );
    done = true;
    await reader;
    expect(violations).toEqual([]);
    const all = await readInbox(db(), lead.id, 0n, 10_000);
    expect(all.map((m) => m.seq)).toEqual(
      Array.from({ length: senders.length * perSender }, (_, i) => BigInt(i + 1)),
    );
    expect(reads).toBeGreaterThan(1);
  });
});
