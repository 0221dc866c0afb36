import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MemberRole, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { migrate } from "../../server/store/migrate.js";
import { createPgDatabase } from "../../server/store/pg-database.js";
import { createScratchPgDatabase } from "../support/databases.js";
import { startTestEnv, type TeamClient, type TestEnv, uniqueName } from "../support/harness.js";
import { planRequest, text } from "../support/protocol-helpers.js";
import { eventKey, watch, watchersParked } from "../support/team-watch.js";

type Replica = TestEnv & { close(): Promise<void> };

/**
 * Two server processes' worth of state on one PostgreSQL database. Heartbeats are an hour
 * apart, so an event reaching a watcher on the other replica (whose stream re-reads only on a
 * wake-up or a heartbeat) can only have come through the cluster bus's LISTEN/NOTIFY.
 */
describe.skipIf(inject("pgAdminUrl") === "")(
  "WatchTeam across 2 replicas on one PostgreSQL",
  () => {
    const replicas: Replica[] = [];
    let drop: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      const scratch = await createScratchPgDatabase();
      drop = scratch.drop;
      for (let i = 0; i < 2; i++) {
        const db = createPgDatabase({ connectionString: scratch.url, poolSize: 10 });
        await migrate(db);
        replicas.push(
          await startTestEnv(
            "postgres",
            { db, url: scratch.url, dispose: () => db.close() },
            { heartbeatIntervalMs: 3_600_000 },
          ),
        );
      }
    });

    afterAll(async () => {
      for (const r of replicas) {
        await r.close();
        await r.db.close();
      }
      await drop?.();
    });

    const on = (i: number, token: string) => (replicas[i] as Replica).client(token) as TeamClient;

    it("events committed through one replica reach a watcher on the other", async () => {
      const created = await on(0, "").createTeam({ team: uniqueName("feed") });
      const lead0 = on(0, created.token);
      const lead1 = on(1, created.token);
      const alice1 = on(1, (await lead1.addMember({ name: "alice" })).token);
      const app0 = (replicas[0] as Replica).app;
      const w = watch(lead0, { fromNow: true });
      await watchersParked(app0, 1); // read up to date: what follows can only come live
      // An envelope, a request change and a member change, each committed on replica 1.
      await alice1.send({ to: "team-lead", message: text("from replica 1") });
      await w.until("the envelope", (x) => x.events().length >= 1);
      const asked = await alice1.send({ to: "team-lead", message: planRequest("1. plan") });
      await w.until("the plan and its request", (x) => x.events().length >= 3);
      await alice1.cancelRequest({ requestId: asked.requestId });
      await w.until("the cancel", (x) =>
        x
          .events()
          .some((e) => eventKey(e) === `request ${asked.requestId} ${RequestStatus.CANCELED}`),
      );
      const eye = await lead1.addMember({ name: "eye", role: MemberRole.OBSERVER });
      await w.until("the observer's arrival", (x) =>
        x.events().some((e) => eventKey(e).startsWith("member eye")),
      );
      expect(w.events().map(eventKey).slice(0, 3)).toEqual([
        "envelope team-lead#1",
        "envelope team-lead#2",
        expect.stringMatching(/^request req_\S+ 1$/),
      ]);
      w.stop();

      // RemoveMember on replica 1 ends the observer's feed on replica 0.
      const eyeFeed = watch(on(0, eye.token), { fromNow: true });
      await watchersParked(app0, 1);
      await lead1.removeMember({ name: "eye" });
      expect((await eyeFeed.ended)?.code).toBe(Code.Unauthenticated);
    });
  },
);
