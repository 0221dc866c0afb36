import { expect, it } from "vitest";
import { appendToInboxes } from "../../server/store/send.js";
import { describeEachDatabase } from "../support/harness.js";
import { inbox } from "../support/protocol-helpers.js";

describeEachDatabase("an envelope's sent_at", (env) => {
  it("is when the message was stored, not when its transaction began", async () => {
    const t = await env().team("alice");
    const [row] = await env().db.query<{ team_id: number; id: number }>(
      `SELECT m.team_id, m.id FROM members m JOIN teams t ON t.id = m.team_id
       WHERE t.name = $1 AND m.name = 'alice'`,
      [t.name],
    );
    if (!row) throw new Error("alice not found");
    let afterWait: Date | undefined;
    await env().db.transaction(async (tx) => {
      // A transaction that waited (for a lock, or a busy embedded database) before storing:
      // the sweeper's expiry notices are written this way.
      await tx.query("SELECT pg_sleep(0.2)");
      const [now] = await tx.query<{ t: Date }>("SELECT clock_timestamp() AS t");
      afterWait = now?.t;
      await appendToInboxes(
        tx,
        {
          teamId: row.team_id,
          senderId: null,
          fromName: "",
          to: "alice",
          kind: "text",
          body: new Uint8Array([0x0a, 0x01, 0x78]), // Message{text: "x"}
        },
        [{ id: row.id, name: "alice" }],
      );
    });
    const [envelope] = await inbox(t.member("alice").client);
    const sentAt = Number(envelope?.sentAt?.seconds) * 1000 + (envelope?.sentAt?.nanos ?? 0) / 1e6;
    expect(sentAt).toBeGreaterThanOrEqual(afterWait?.getTime() ?? Number.POSITIVE_INFINITY);
  });
});
