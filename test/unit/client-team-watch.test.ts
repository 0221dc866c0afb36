import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { TeamError } from "../../client/team-error.js";
import { createTeamWatch, type TeamWatchStatus } from "../../client/team-watch.js";
import { TeamEventSchema } from "../../gen/team/v1/feed_pb.js";
import { WatchTeamResponseSchema } from "../../gen/team/v1/team_service_pb.js";
import { FAST_BACKOFF, scriptedServer, silence, take } from "../support/scripted-streams.js";

/**
 * The team watch's recovery (client/team-watch.ts over client/resumable-stream.ts), against a
 * scripted WatchTeam on an in-memory transport, as client-inbox.test.ts does for the inbox:
 * it resumes from the last cursor the server gave, an event's or a heartbeat's.
 */

const event = (cursor: string) =>
  create(WatchTeamResponseSchema, {
    cursor,
    kind: { case: "event", value: create(TeamEventSchema, { position: BigInt(cursor.slice(1)) }) },
  });
const heartbeat = (cursor: string) =>
  create(WatchTeamResponseSchema, { cursor, kind: { case: "heartbeat", value: {} } });

const positionOf = (e: { position: bigint }) => e.position;

describe("the team watch's recovery", () => {
  it("resumes from the last cursor (a heartbeat's too) after a break, a clean end and a silent stream", async () => {
    const server = scriptedServer("watchTeam", [
      async function* () {
        yield event("c1");
        yield heartbeat("c2");
        throw new ConnectError("connection reset", Code.Unavailable);
      },
      async function* () {
        yield event("c3");
        // Then ends cleanly, as a server does when it stops gracefully.
      },
      async function* (_req, ctx) {
        yield event("c4");
        await silence(ctx); // replaced after idleTimeoutMs
      },
      async function* (_req, ctx) {
        yield event("c5");
        await silence(ctx);
      },
    ]);
    const statuses: TeamWatchStatus[] = [];
    const watch = createTeamWatch(server.rpc, {
      fromNow: true,
      backoff: FAST_BACKOFF,
      idleTimeoutMs: 50,
      onStatus: (s) => statuses.push(s),
    });
    expect(await take(watch, 4, positionOf)).toEqual([1n, 3n, 4n, 5n]);
    expect(server.watches).toEqual([
      { cursor: "", fromNow: true },
      { cursor: "c2", fromNow: false },
      { cursor: "c3", fromNow: false },
      { cursor: "c4", fromNow: false },
    ]);
    expect(watch.connects).toBe(4);
    expect(watch.cursor).toBe("c5");
    const connecting = statuses.flatMap((s) => (s.state === "connecting" ? [s.cursor] : []));
    expect(connecting).toEqual([undefined, "c2", "c3", "c4"]);
    expect(statuses.filter((s) => s.state === "disconnected")).toHaveLength(3);
  });

  it("ends with the TeamError on a refusal that retrying cannot fix", async () => {
    const server = scriptedServer("watchTeam", [
      async function* () {
        yield heartbeat("c1");
        throw new ConnectError("[watch-lead-or-observer] not for teammates", Code.PermissionDenied);
      },
    ]);
    const watch = createTeamWatch(server.rpc, { backoff: FAST_BACKOFF });
    const ended = await take(watch, 1, positionOf).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(ended).toBeInstanceOf(TeamError);
    expect((ended as TeamError).code).toBe(Code.PermissionDenied);
    expect(server.watches).toHaveLength(1);
  });
});
