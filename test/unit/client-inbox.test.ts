import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createBackoff } from "../../client/backoff.js";
import { createInbox, type InboxStatus } from "../../client/inbox.js";
import { TeamError } from "../../client/team-error.js";
import { EnvelopeSchema } from "../../gen/team/v1/records_pb.js";
import { SubscribeResponseSchema } from "../../gen/team/v1/team_service_pb.js";
import { FAST_BACKOFF, scriptedServer, silence, take } from "../support/scripted-streams.js";

/**
 * The inbox iterator's recovery logic, against a scripted Subscribe on an in-memory
 * transport: each test decides exactly how the "server" misbehaves (duplicates, broken and
 * silent streams, refusals), which a real server cannot be made to do on cue.
 * The same guarantees against a real server killed with SIGKILL are in
 * client-inbox-restart.test.ts.
 */

const envelope = (seq: number) =>
  create(SubscribeResponseSchema, {
    event: {
      case: "envelope",
      value: create(EnvelopeSchema, {
        seq: BigInt(seq),
        from: "team-lead",
        to: "alice",
        message: { kind: { case: "text", value: `m${seq}` } },
      }),
    },
  });
const heartbeat = (lastSeq: number) =>
  create(SubscribeResponseSchema, {
    event: { case: "heartbeat", value: { lastSeq: BigInt(lastSeq) } },
  });

const seqOf = (e: { seq: bigint }) => e.seq;

describe("the inbox iterator's recovery", () => {
  it("resumes after the last seq it handed out, drops duplicates, retries broken and ended streams", async () => {
    const server = scriptedServer("subscribe", [
      async function* () {
        yield envelope(1);
        yield envelope(2);
        yield envelope(3);
        throw new ConnectError("connection reset", Code.Unavailable);
      },
      async function* () {
        // A server that replays what the client already has (say, from an older cursor).
        yield envelope(2);
        yield envelope(3);
        yield envelope(4);
        // Then ends cleanly, as a server does when it stops gracefully.
      },
      async function* (_req, ctx) {
        yield envelope(5);
        await silence(ctx);
      },
    ]);
    const statuses: InboxStatus["state"][] = [];
    const inbox = createInbox(server.rpc, {
      backoff: FAST_BACKOFF,
      onStatus: (s) => statuses.push(s.state),
    });
    expect(await take(inbox, 5, seqOf)).toEqual([1n, 2n, 3n, 4n, 5n]);
    expect(server.subscribes).toEqual([undefined, 3n, 4n]);
    expect(inbox.duplicates).toBe(2);
    expect(inbox.connects).toBe(3);
    expect(statuses.filter((s) => s === "disconnected")).toHaveLength(2);
    // Auto-ack: everything whose loop body returned, i.e. 1..4 (5 was being handled).
    expect(server.acks.at(-1)).toBe(4n);
  });

  it("a heartbeat before any message tells it where to resume", async () => {
    const server = scriptedServer("subscribe", [
      async function* () {
        yield heartbeat(7);
        throw new ConnectError("gone", Code.Unavailable);
      },
      async function* (_req, ctx) {
        yield envelope(8);
        await silence(ctx);
      },
    ]);
    expect(await take(createInbox(server.rpc, { backoff: FAST_BACKOFF }), 1, seqOf)).toEqual([8n]);
    expect(server.subscribes).toEqual([undefined, 7n]);
  });

  it("replaces a stream that stays silent past idleTimeoutMs", async () => {
    const server = scriptedServer("subscribe", [
      async function* (_req, ctx) {
        yield envelope(1);
        await silence(ctx); // no message, no heartbeat: a dead connection looks like this
      },
      async function* (_req, ctx) {
        yield envelope(2);
        await silence(ctx);
      },
    ]);
    const inbox = createInbox(server.rpc, {
      afterSeq: 0,
      backoff: FAST_BACKOFF,
      idleTimeoutMs: 150,
    });
    expect(await take(inbox, 2, seqOf)).toEqual([1n, 2n]);
    // The second Subscribe (after seq 1) is the idle timeout's doing: the first stream never
    // ended by itself.
    expect(server.subscribes).toEqual([0n, 1n]);
  });

  it("ends with the TeamError on a refusal that retrying cannot fix", async () => {
    const server = scriptedServer("subscribe", [
      // biome-ignore lint/correctness/useYield: the stream is refused before its first message.
      async function* () {
        throw new ConnectError("token revoked", Code.Unauthenticated);
      },
    ]);
    const inbox = createInbox(server.rpc, { backoff: FAST_BACKOFF });
    const err = await take(inbox, 1, seqOf).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TeamError);
    expect((err as TeamError).code).toBe(Code.Unauthenticated);
    expect(server.subscribes).toHaveLength(1);
  });

  it("acks are cumulative: explicit acks send the highest seq, and flush waits for them", async () => {
    const server = scriptedServer("subscribe", [
      async function* (_req, ctx) {
        for (let seq = 1; seq <= 5; seq++) yield envelope(seq);
        await silence(ctx);
      },
    ]);
    const inbox = createInbox(server.rpc, { autoAck: false, backoff: FAST_BACKOFF });
    for await (const e of inbox) {
      if (e.seq === 2n || e.seq === 4n) inbox.ack(e);
      if (e.seq === 5n) break;
    }
    await inbox.flush();
    expect(server.acks.at(-1)).toBe(4n);
    expect([...server.acks].sort()).toEqual(server.acks); // never backwards
  });

  it("close() from the loop body ends the loop and sends the acks", async () => {
    const server = scriptedServer("subscribe", [
      async function* (_req, ctx) {
        for (let seq = 1; seq <= 5; seq++) yield envelope(seq);
        await silence(ctx);
      },
    ]);
    const inbox = createInbox(server.rpc, { backoff: FAST_BACKOFF });
    const seen: bigint[] = [];
    for await (const e of inbox) {
      seen.push(e.seq);
      if (e.seq === 3n) await inbox.close();
    }
    expect(seen).toEqual([1n, 2n, 3n]);
    // The body that called close() returned, so 3 counts as handled.
    expect(server.acks.at(-1)).toBe(3n);
  });

  it("an inbox is iterated once", () => {
    const inbox = createInbox(scriptedServer("subscribe", []).rpc);
    inbox[Symbol.asyncIterator]();
    expect(() => inbox[Symbol.asyncIterator]()).toThrow(/iterated once/);
  });
});

describe("reconnect backoff", () => {
  it("doubles its ceiling up to maxMs, keeps half of it fixed and jitters the rest; reset starts over", () => {
    let r = 0;
    const backoff = createBackoff({ initialMs: 100, maxMs: 1_000, random: () => r });
    const lows = [0, 1, 2, 3, 4, 5].map(() => backoff.next());
    expect(lows).toEqual([50, 100, 200, 400, 500, 500]);
    backoff.reset();
    r = 0.999_999;
    const highs = [0, 1, 2, 3, 4].map(() => backoff.next());
    expect(highs).toEqual([100, 200, 400, 800, 1_000]);
    expect(backoff.attempts).toBe(5);
  });
});
