import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { parseConfig } from "../../server/config.js";
import { RetryInfoSchema } from "../../server/interceptors/retry-info.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv, uniqueName } from "../support/harness.js";

const refusal = (err: unknown) => {
  const e = ConnectError.from(err);
  return {
    code: e.code,
    rule: e.findDetails(RuleViolationSchema)[0]?.rule,
    retry: e.findDetails(RetryInfoSchema).length > 0,
    message: e.rawMessage,
  };
};

describe("open CreateTeam's limits: defaults", () => {
  it("10 teams a minute per address, bursts of 10, 1,000 teams; 0 turns each off", () => {
    const c = parseConfig([], {});
    expect([c.createTeamRatePerMin, c.createTeamBurst, c.maxTeams]).toEqual([10, 10, 1_000]);
    const off = parseConfig([], { CREATE_TEAM_RATE_PER_MIN: "0", MAX_TEAMS: "0" });
    expect([off.createTeamRatePerMin, off.maxTeams]).toEqual([0, 0]);
  });
});

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`CreateTeam without TEAM_ADMIN_TOKEN is limited [${kind}]`, () => {
    let testDb: TestDatabase;
    const envs: (TestEnv & { close(): Promise<void> })[] = [];
    const start = async (options: Parameters<typeof startTestEnv>[2]) => {
      const env = await startTestEnv(kind, testDb, options);
      envs.push(env);
      return env;
    };
    beforeAll(async () => {
      // A database of its own: the ceiling counts every team in it.
      testDb = await openTestDatabase(kind);
    });
    afterAll(async () => {
      for (const env of envs) await env.close();
      await testDb?.dispose();
    });

    it("a burst of 3 from one address, then ResourceExhausted naming the rate, with RetryInfo", async () => {
      const env = await start({ openCreateTeam: { perMinute: 1, burst: 3, maxTeams: 0 } });
      const anyone = env.client();
      for (let i = 0; i < 3; i++) await anyone.createTeam({ team: uniqueName("open") });
      const err = await anyone.createTeam({ team: uniqueName("open") }).catch(refusal);
      expect(err).toMatchObject({
        code: Code.ResourceExhausted,
        rule: "create-team-rate",
        retry: true,
      });
      expect((err as { message: string }).message).toMatch(
        /CREATE_TEAM_RATE_PER_MIN, or set TEAM_ADMIN_TOKEN/,
      );
    });

    it("past MAX_TEAMS teams in the database, ResourceExhausted naming it; with an admin token, neither limit applies", async () => {
      const existing = (await testDb.db.query<{ n: string }>("SELECT count(*) AS n FROM teams"))[0];
      const max = Number(existing?.n ?? 0) + 2;
      const open = await start({ openCreateTeam: { perMinute: 0, burst: 1, maxTeams: max } });
      await open.client().createTeam({ team: uniqueName("ceiling") });
      await open.client().createTeam({ team: uniqueName("ceiling") });
      const err = await open
        .client()
        .createTeam({ team: uniqueName("ceiling") })
        .catch(refusal);
      expect(err).toMatchObject({ code: Code.ResourceExhausted, rule: "max-teams" });
      expect((err as { message: string }).message).toMatch(/MAX_TEAMS/);

      const admin = await start({
        adminToken: "admin-secret",
        openCreateTeam: { perMinute: 1, burst: 1, maxTeams: max },
      });
      for (let i = 0; i < 3; i++) {
        await admin.client("admin-secret").createTeam({ team: uniqueName("admin") });
      }
    });

    it("20 creates racing for the last place under MAX_TEAMS: exactly one team is made", async () => {
      const existing = (await testDb.db.query<{ n: string }>("SELECT count(*) AS n FROM teams"))[0];
      const max = Number(existing?.n ?? 0) + 1;
      const open = await start({ openCreateTeam: { perMinute: 0, burst: 1, maxTeams: max } });
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () =>
          open
            .client()
            .createTeam({ team: uniqueName("race") })
            .then(() => "created")
            .catch((err) => (refusal(err) as { rule?: string }).rule),
        ),
      );
      expect(outcomes.filter((o) => o === "created")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "max-teams")).toHaveLength(19);
      const after = (await testDb.db.query<{ n: string }>("SELECT count(*) AS n FROM teams"))[0];
      expect(Number(after?.n)).toBe(max);
    });
  });
}
