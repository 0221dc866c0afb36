import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { DomainError, RuleViolationError } from "../../server/errors.js";
import { readInbox } from "../../server/store/inbox.js";
import type { SendResult } from "../../server/store/send.js";
import { sendBatch } from "../../server/store/send-batch.js";
import { describeEachDatabase } from "../support/harness.js";
import { inbox, refused, text } from "../support/protocol-helpers.js";

const body = (s: string) => new TextEncoder().encode(s);

describeEachDatabase("group commit (many sends, one transaction)", (env) => {
  async function ids(team: string) {
    const rows = await env().db.query<{ id: number; name: string; team_id: number }>(
      "SELECT m.id, m.name, m.team_id FROM members m JOIN teams t ON t.id = m.team_id WHERE t.name = $1",
      [team],
    );
    const of = (name: string) => {
      const r = rows.find((x) => x.name === name);
      if (!r) throw new Error(`no ${name}`);
      return r;
    };
    return of;
  }

  it("stores a batch in arrival order per inbox; a send to an unknown member fails alone", async () => {
    const t = await env().team("a", "b", "c");
    const of = await ids(t.name);
    const from = (n: string) => ({
      teamId: of(n).team_id,
      sender: { id: of(n).id, name: n },
      kind: "text",
    });
    const results = await sendBatch(env().db, [
      { ...from("a"), to: "team-lead", body: body("1") },
      { ...from("b"), to: "nobody", body: body("x") },
      { ...from("b"), to: "team-lead", body: body("2") },
      { ...from("c"), to: "*", body: body("3") },
      { ...from("a"), to: "team-lead", body: body("4") },
    ]);
    expect(results[1]).toBeInstanceOf(RuleViolationError);
    expect((results[1] as RuleViolationError).rule).toBe("known-recipient");
    const ok = results.filter((r): r is SendResult => !(r instanceof Error));
    expect(ok.map((r) => r.deliveries.map((d) => [d.to, d.seq]))).toEqual([
      [["team-lead", 1n]],
      [["team-lead", 2n]],
      [
        ["team-lead", 3n],
        ["a", 1n],
        ["b", 1n],
      ],
      [["team-lead", 4n]],
    ]);
    const lead = await readInbox(env().db, of("team-lead").id, 0n, 100);
    expect(lead.map((m) => new TextDecoder().decode(m.body))).toEqual(["1", "2", "3", "4"]);
    expect(lead.map((m) => m.fromName)).toEqual(["a", "b", "c", "a"]);
  });

  it("a sender stopped before the batch commits is refused alone (Unauthenticated), whatever caches say", async () => {
    const t = await env().team("a", "b");
    const of = await ids(t.name);
    await env().db.query("UPDATE members SET status = 'stopped' WHERE id = $1", [of("b").id]);
    const from = (n: string) => ({
      teamId: of(n).team_id,
      sender: { id: of(n).id, name: n },
      kind: "text",
    });
    const results = await sendBatch(env().db, [
      { ...from("b"), to: "team-lead", body: body("revoked") },
      { ...from("b"), to: "*", body: body("revoked broadcast") },
      { ...from("a"), to: "team-lead", body: body("fine") },
    ]);
    expect(results.map((r) => (r instanceof DomainError ? r.refusal : "stored"))).toEqual([
      "unauthenticated",
      "unauthenticated",
      "stored",
    ]);
    const lead = await readInbox(env().db, of("team-lead").id, 0n, 100);
    expect(lead.map((m) => new TextDecoder().decode(m.body))).toEqual(["fine"]);
    expect(await readInbox(env().db, of("a").id, 0n, 100)).toEqual([]);
  });

  it("concurrent broadcasts, plain and with message_id (both group-committed, keyed ones in two statements), never deadlock; every inbox gap-free", async () => {
    const names = Array.from({ length: 16 }, (_, i) => `b${i}`);
    const t = await env().team(...names);
    await Promise.all(
      names.map(async (n, k) => {
        for (let i = 0; i < 10; i++) {
          await t.member(n).client.send({
            to: "*",
            message: text(`${n}:${i}`),
            // Half the senders alternate between plain and keyed sends.
            messageId: k % 2 === 0 && i % 2 === 0 ? `${n}-${i}` : "",
          });
        }
      }),
    );
    for (const n of names) {
      const got = await inbox(t.member(n).client);
      expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 150 }, (_, i) => BigInt(i + 1)));
      for (const other of names.filter((o) => o !== n)) {
        expect(got.filter((e) => e.from === other).map((e) => e.message?.kind.value)).toEqual(
          Array.from({ length: 10 }, (_, i) => `${other}:${i}`),
        );
      }
    }
    expect((await inbox(t.lead)).length).toBe(160);
  });

  it("64 concurrent senders into the lead's inbox: every message once, seqs 1..n without gaps, each sender's in order", async () => {
    const senders = Array.from({ length: 64 }, (_, i) => `w${i}`);
    const t = await env().team(...senders);
    await Promise.all(
      senders.map(async (s) => {
        for (let i = 0; i < 10; i++) {
          await t.member(s).client.send({ to: "team-lead", message: text(`${s}:${i}`) });
        }
      }),
    );
    const got = await inbox(t.lead);
    expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 640 }, (_, i) => BigInt(i + 1)));
    for (const s of senders) {
      expect(got.filter((e) => e.from === s).map((e) => e.message?.kind.value)).toEqual(
        Array.from({ length: 10 }, (_, i) => `${s}:${i}`),
      );
    }
    // Refusals still come back one by one through the batch path.
    const r = await refused(() => t.lead.send({ to: "ghost", message: text("x") }));
    expect(r.code).toBe(Code.NotFound);
  });
});
