import { expect, it } from "vitest";
import { readInbox } from "../../server/store/inbox.js";
import { appendToInboxes } from "../../server/store/send.js";
import { describeEachStore, insertTeam } from "../support/sql-fixtures.js";

describeEachStore("an envelope's sent_at", (db) => {
  it("is when the message was stored, not when its transaction began", async () => {
    const alice = (await insertTeam(db(), ["alice"])).member("alice");
    let afterWait: Date | undefined;
    await db().transaction(async (tx) => {
      // A transaction that waited (for a lock, or a busy embedded database) before storing:
      // the sweeper's expiry notices are written this way.
      await tx.query("SELECT pg_sleep(0.2)");
      const [now] = await tx.query<{ t: Date }>("SELECT clock_timestamp() AS t");
      afterWait = now?.t;
      await appendToInboxes(
        tx,
        {
          teamId: alice.teamId,
          senderId: null,
          fromName: "",
          to: "alice",
          kind: "text",
          body: new Uint8Array([0x0a, 0x01, 0x78]), // Message{text: "x"}
        },
        [{ id: alice.id, name: "alice" }],
      );
    });
    const [stored] = await readInbox(db(), alice.id, 0n, 10);
    expect(stored?.sentAt.getTime()).toBeGreaterThanOrEqual(
      afterWait?.getTime() ?? Number.POSITIVE_INFINITY,
    );
  });
});
