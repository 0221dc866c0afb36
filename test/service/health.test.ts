import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, inject, it } from "vitest";
import {
  Health,
  type HealthCheckResponse_ServingStatus,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/health/v1/health_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import {
  afterThisTest,
  exitOf,
  startServer,
  tempDataDir,
  waitFor,
  withTimeout,
} from "../support/child-server.js";
import { createScratchPgDatabase } from "../support/databases.js";
import {
  describeEachDatabase,
  type Protocol,
  startTestEnv,
  transportFor,
} from "../support/harness.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

type HealthClient = Client<typeof Health>;

const protocols: Protocol[] = ["grpc", "grpc-web", "connect", "connect-h1"];

/** Follows a Watch stream in the background: every status received, and how it ended. */
function watch(client: HealthClient, service = "") {
  const abort = new AbortController();
  const statuses: HealthCheckResponse_ServingStatus[] = [];
  const ended = (async () => {
    try {
      for await (const r of client.watch({ service }, { signal: abort.signal })) {
        statuses.push(r.status);
      }
      return "ended" as const;
    } catch (err) {
      return ConnectError.from(err);
    }
  })();
  const last = () => statuses[statuses.length - 1];
  return { statuses, ended, last, stop: () => abort.abort() };
}

describeEachDatabase("grpc.health.v1.Health", (env) => {
  const health = (protocol: Protocol = "grpc") =>
    createClient(Health, transportFor(env().server.url, protocol));

  for (const protocol of protocols) {
    it(`${protocol}: Check says SERVING for the server and TeamService, with no token`, async () => {
      const client = health(protocol);
      expect((await client.check({ service: "" })).status).toBe(Status.SERVING);
      expect((await client.check({ service: TeamService.typeName })).status).toBe(Status.SERVING);
    });
  }

  it("Check of a service health is not reported for is NOT_FOUND", async () => {
    const err = await health()
      .check({ service: "team.v1.NoSuchService" })
      .catch((e) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("Watch sends the status at once; an unknown service is SERVICE_UNKNOWN and stays open", async () => {
    for (const [service, expected] of [
      ["", Status.SERVING],
      ["team.v1.NoSuchService", Status.SERVICE_UNKNOWN],
    ] as const) {
      const w = watch(health(), service);
      await waitFor(`the first status of "${service}"`, 5_000, () => w.last());
      expect(w.statuses).toEqual([expected]);
      // Still open: nothing ended it. The client leaving ends it.
      expect(await Promise.race([w.ended, new Promise((r) => setTimeout(r, 200, "open"))])).toBe(
        "open",
      );
      w.stop();
      expect(await w.ended).toMatchObject({ code: Code.Canceled });
    }
  });

  it("Check says NOT_SERVING once a graceful stop has begun, over every protocol", async () => {
    // A second server on the same database, so the suite's own keeps serving. Its stop is
    // begun the way main.ts begins it (health first), and Check is asked before the
    // listener closes: the window in which a load balancer must learn to go elsewhere.
    const db = env().db;
    const stopping = await startTestEnv(env().kind, {
      db,
      url: undefined,
      dispose: async () => {},
    });
    try {
      stopping.app.health.shutdown();
      for (const protocol of protocols) {
        const client = createClient(Health, transportFor(stopping.server.url, protocol));
        expect((await client.check({ service: "" })).status, protocol).toBe(Status.NOT_SERVING);
        expect((await client.check({ service: TeamService.typeName })).status, protocol).toBe(
          Status.NOT_SERVING,
        );
      }
    } finally {
      await stopping.close();
    }
    // The suite's server, not stopping, still serves.
    expect((await health().check({ service: "" })).status).toBe(Status.SERVING);
  });

  it("List reports the server and TeamService", async () => {
    const { statuses } = await health().list({});
    expect(Object.keys(statuses).sort()).toEqual(["", TeamService.typeName]);
    expect(Object.values(statuses).map((s) => s.status)).toEqual([Status.SERVING, Status.SERVING]);
  });
});

/** How a stream ended at a server's stop: "ended" (cleanly, trailers and all), or the error. */
async function endOfStream(ended: Promise<"ended" | ConnectError>) {
  return await ended;
}

const grpcHealth = (url: string) => createClient(Health, createGrpcTransport({ baseUrl: url }));

describe("health of the server process", () => {
  const kinds = [
    { kind: "embedded", skip: false },
    { kind: "postgres", skip: inject("pgAdminUrl") === "" },
  ] as const;

  for (const { kind, skip } of kinds) {
    it.skipIf(skip)(
      `[${kind}] a graceful stop turns Watch to NOT_SERVING, then ends it, and the process exits 0`,
      async () => {
        let env: Record<string, string>;
        if (kind === "postgres") {
          const scratch = await createScratchPgDatabase();
          afterThisTest(scratch.drop);
          env = { DATABASE_URL: scratch.url };
        } else {
          env = { DATA_DIR: await tempDataDir() };
        }
        const server = await startServer(env);
        const client = grpcHealth(server.url);
        const w = watch(client);
        await waitFor("SERVING", 5_000, () => (w.last() === Status.SERVING ? true : undefined));

        server.child.kill("SIGTERM");
        await withTimeout("the Watch stream to end", 10_000, w.ended, server);
        // What health promises: NOT_SERVING reaches the watcher before its stream ends.
        expect(w.statuses).toEqual([Status.SERVING, Status.NOT_SERVING]);
        expect(await endOfStream(w.ended)).toBe("ended");
        expect(await exitOf(server)).toEqual({ code: 0, signal: null });
        expect(server.events("stop_grace_exceeded")).toEqual([]);
      },
      // A child server on the embedded database takes seconds to start on a busy machine.
      60_000,
    );
  }

  it.skipIf(inject("pgAdminUrl") === "")(
    "[postgres] NOT_SERVING while PostgreSQL is unreachable, SERVING again once it is back",
    async () => {
      const scratch = await createScratchPgDatabase();
      afterThisTest(scratch.drop);
      const direct = new URL(scratch.url);
      const proxy = await startTcpProxy({
        host: direct.hostname,
        port: Number(direct.port || 5432),
      });
      afterThisTest(() => proxy.close());
      const viaProxy = new URL(scratch.url);
      viaProxy.hostname = "127.0.0.1";
      viaProxy.port = String(proxy.port);

      const server = await startServer({ DATABASE_URL: viaProxy.toString() });
      const client = grpcHealth(server.url);
      const w = watch(client);
      afterThisTest(async () => w.stop());
      await waitFor("SERVING", 5_000, () => (w.last() === Status.SERVING ? true : undefined));

      // Nobody calls Check: the background ping alone must notice (it runs every 2 s).
      await proxy.cut();
      await waitFor(
        "Watch to report NOT_SERVING",
        8_000,
        () => (w.last() === Status.NOT_SERVING ? true : undefined),
        server,
      );
      expect((await client.check({ service: "" })).status).toBe(Status.NOT_SERVING);
      expect((await client.check({ service: TeamService.typeName })).status).toBe(
        Status.NOT_SERVING,
      );
      // The log line travels over the child's stdout pipe, independently of the Watch
      // stream, so it may be read a moment after the status arrives.
      await waitFor("the db_unreachable log line", 5_000, () =>
        server.events("db_unreachable").length > 0 ? true : undefined,
      );
      expect(server.events("db_unreachable")).toHaveLength(1);

      await proxy.restore();
      // Check pings on demand: it is SERVING as soon as the database answers, before the
      // background ping comes round; Watch follows.
      expect((await client.check({ service: "" })).status).toBe(Status.SERVING);
      await waitFor("Watch to report SERVING again", 8_000, () =>
        w.last() === Status.SERVING && w.statuses.length === 3 ? true : undefined,
      );
      expect(w.statuses).toEqual([Status.SERVING, Status.NOT_SERVING, Status.SERVING]);
      await waitFor("the db_reachable log line", 5_000, () =>
        server.events("db_reachable").length > 0 ? true : undefined,
      );
      expect(server.events("db_reachable")).toHaveLength(1);
      // And the service itself works again.
      const teams = createClient(TeamService, createGrpcTransport({ baseUrl: server.url }));
      expect((await teams.createTeam({ team: "after-the-outage" })).token).toMatch(/^tp_/);

      server.child.kill("SIGTERM");
      await withTimeout("the Watch stream to end", 10_000, w.ended, server);
      expect(w.statuses).toEqual([
        Status.SERVING,
        Status.NOT_SERVING,
        Status.SERVING,
        Status.NOT_SERVING,
      ]);
      expect(await endOfStream(w.ended)).toBe("ended");
      expect(await exitOf(server)).toEqual({ code: 0, signal: null });
    },
    60_000,
  );
});
