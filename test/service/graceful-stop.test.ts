import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { waitFor } from "../support/child-server.js";
import { databaseKinds, openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";
import { planRequest } from "../support/protocol-helpers.js";

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`graceful stop [${kind}]`, () => {
    let testDb: TestDatabase;
    let env: TestEnv & { close(): Promise<void> };
    beforeAll(async () => {
      testDb = await openTestDatabase(kind);
      env = await startTestEnv(kind, testDb);
    });
    afterAll(async () => {
      await env.app.close();
      await testDb.dispose();
    });

    it("a waiting AwaitRequest answers at once with the pending record; the stop does not wait out its grace", async () => {
      const t = await env.team("alice");
      const sent = await t
        .member("alice")
        .client.send({ to: "team-lead", message: planRequest("x") });
      // Ten minutes to wait, and a minute of grace: without the early answer the stop (and
      // this test) would hang far past its timeout.
      const waiting = t.lead.awaitRequest({
        requestId: sent.requestId,
        timeout: { seconds: 600n },
      });
      // The stop begins once the call waits in the server (before, it would be refused).
      await waitFor("AwaitRequest to wait", 20_000, () => env.app.waiters.size === 1 || undefined);
      env.app.beginStop();
      const [answer] = await Promise.all([
        waiting,
        env.server.close(60_000, () => env.app.hub.endAll()),
      ]);
      expect(answer.request?.status).toBe(RequestStatus.PENDING);
      expect(answer.request?.requestId).toBe(sent.requestId);
    });
  });
}
