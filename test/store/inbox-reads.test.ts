import { expect, it } from "vitest";
import { readInboxes } from "../../server/store/inbox.js";
import { describeEachDatabase } from "../support/harness.js";
import { planRequest, text } from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";
import { sleep } from "../support/wait.js";

describeEachDatabase(
  "grouped inbox reads (live subscriptions woken together)",
  (env) => {
    async function memberIds(team: string) {
      const rows = await env().db.query<{ id: number; name: string }>(
        "SELECT m.id, m.name FROM members m JOIN teams t ON t.id = m.team_id WHERE t.name = $1",
        [team],
      );
      return (name: string) => rows.find((r) => r.name === name)?.id as number;
    }

    it("reads several inboxes in one query, each after its own cursor, the same inbox twice included", async () => {
      const t = await env().team("a", "b");
      for (let i = 1; i <= 3; i++) {
        await t.lead.send({ to: "a", message: text(`a${i}`) });
        await t.lead.send({ to: "b", message: text(`b${i}`) });
      }
      const id = await memberIds(t.name);
      const pages = await readInboxes(
        env().db,
        [
          { memberId: id("a"), afterSeq: 0n },
          { memberId: id("b"), afterSeq: 2n },
          { memberId: id("a"), afterSeq: 3n },
          { memberId: id("team-lead"), afterSeq: 0n },
        ],
        100,
        1024 * 1024,
      );
      expect(pages.map((p) => p.messages.map((m) => m.seq))).toEqual([[1n, 2n, 3n], [3n], [], []]);
      expect(pages[0]?.messages.map((m) => m.fromName)).toEqual([
        "team-lead",
        "team-lead",
        "team-lead",
      ]);
      expect(pages.map((p) => p.more)).toEqual([false, false, false, false]);
    });

    it("caps each read by rows and by bytes (the first row always comes) and says when more is left", async () => {
      const t = await env().team("c");
      const plan = "p".repeat(200_000);
      for (let i = 0; i < 4; i++)
        await t.member("c").client.send({ to: "team-lead", message: planRequest(`${i}${plan}`) });
      for (let i = 0; i < 3; i++) await t.lead.send({ to: "c", message: text(`c${i}`) });
      const id = await memberIds(t.name);
      const [lead, tiny, rows, exact] = await readInboxes(
        env().db,
        [
          { memberId: id("team-lead"), afterSeq: 0n },
          { memberId: id("team-lead"), afterSeq: 0n },
          { memberId: id("c"), afterSeq: 0n },
          { memberId: id("c"), afterSeq: 1n },
        ],
        2,
        300_000,
      );
      // 200 KB rows with a 300 KB cap: the second starts below the cap, so it comes; no third.
      expect(lead?.messages.map((m) => m.seq)).toEqual([1n, 2n]);
      expect(lead?.more).toBe(true);
      expect(tiny?.more).toBe(true);
      expect(rows?.messages.map((m) => m.seq)).toEqual([1n, 2n]);
      expect(rows?.more).toBe(true);
      // Two rows left after seq 1 and a limit of 2: full by rows, so "more" (a read finds none).
      expect(exact?.messages.map((m) => m.seq)).toEqual([2n, 3n]);
      const [after] = await readInboxes(
        env().db,
        [{ memberId: id("c"), afterSeq: 3n }],
        2,
        300_000,
      );
      expect(after).toEqual({ messages: [], more: false });
      const [oneByBytes] = await readInboxes(
        env().db,
        [{ memberId: id("team-lead"), afterSeq: 0n }],
        100,
        1,
      );
      expect(oneByBytes?.messages.map((m) => m.seq)).toEqual([1n]);
      expect(oneByBytes?.more).toBe(true);
    });

    it("a subscriber's backlog larger than one page (by bytes) arrives whole and in order", async () => {
      const t = await env().team("d");
      // 8 plans of 250 KB: 2 MB, more than the 1 MiB a subscription reads at a time.
      for (let i = 0; i < 8; i++) {
        await t
          .member("d")
          .client.send({ to: "team-lead", message: planRequest(`${i}`.repeat(250_000)) });
      }
      const abort = new AbortController();
      const seqs: bigint[] = [];
      for await (const r of t.lead.subscribe({ afterSeq: 0n }, { signal: abort.signal })) {
        if (r.event.case === "envelope") seqs.push(r.event.value.seq);
        if (seqs.length === 8) break;
      }
      abort.abort();
      expect(seqs).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
    });

    it("one broadcast reaches 80 live subscribers of one team (more than one grouped read), each once", async () => {
      const names = Array.from({ length: 80 }, (_, i) => `s${i}`);
      const t = await env().team(...names);
      // One controller per stream: connect links each call to the signal it is given until
      // the call ends, so 80 streams on one signal put 80 listeners on it (Node warns past 10).
      const aborts = names.map(() => new AbortController());
      const before = env().app.hub.waiting;
      const got = new Map<string, string[]>(names.map((n) => [n, []]));
      const streams = names.map(async (n, i) => {
        try {
          const signal = aborts[i]?.signal;
          for await (const r of t.member(n).client.subscribe({}, { signal })) {
            if (r.event.case === "envelope")
              got.get(n)?.push(String(r.event.value.message?.kind.value));
          }
        } catch {} // aborted
      });
      await subscribedBeyond(env().app, before + names.length - 1); // all 80 read up, waiting
      await t.lead.send({ to: "*", message: text("all hands") });
      await t.lead.send({ to: "*", message: text("again") });
      // A barrier instead of a wait for duplicates: a stream delivers in seq order from a
      // cursor that only moves forward, so a repeat of the first two comes before this one.
      await t.lead.send({ to: "*", message: text("barrier") });
      // Heartbeats are an hour apart here: what arrives came through the commits' wake-ups.
      const deadline = Date.now() + 20_000; // a bound on a hang, not on speed
      while ([...got.values()].some((m) => !m.includes("barrier"))) {
        if (Date.now() > deadline) {
          const missing = names.filter((n) => !got.get(n)?.includes("barrier"));
          throw new Error(`no barrier (no live wake-up) on ${missing.length} streams: ${missing}`);
        }
        await sleep(20);
      }
      for (const abort of aborts) abort.abort();
      await Promise.all(streams);
      for (const n of names) expect(got.get(n), n).toEqual(["all hands", "again", "barrier"]);
    });
  },
  // An hour between heartbeats: a live message can only come through its wake-up, never
  // through the re-read after a heartbeat, so a live test cannot pass as a backlog test.
  { heartbeatIntervalMs: 3_600_000 },
);
