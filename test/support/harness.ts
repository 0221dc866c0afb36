import { generateKeyPairSync, randomBytes } from "node:crypto";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { type App, type AppOptions, createApp } from "../../server/app.js";
import {
  type RunningServer,
  type ServerOptions,
  startServer,
} from "../../server/http/http-server.js";
import { silentLogger } from "../../server/logger.js";
import type { Database } from "../../server/store/database.js";
import {
  type DatabaseKind,
  databaseKinds,
  openTestDatabase,
  type TestDatabase,
} from "./databases.js";

export type Protocol = "connect" | "grpc" | "grpc-web" | "connect-h1";
export type TeamClient = Client<typeof TeamService>;

/** A real server on a random port, over a database of one kind. */
export interface TestEnv {
  kind: DatabaseKind;
  db: Database;
  app: App;
  server: RunningServer;
  /** A generated client, authenticated with `token` (none: anonymous). */
  client(token?: string, protocol?: Protocol): TeamClient;
  /** A new team with a lead and the named teammates; tokens included. */
  team(...teammates: string[]): Promise<TestTeam>;
}

export interface TestTeam {
  name: string;
  lead: TeamClient;
  leadToken: string;
  /** A teammate's client and token (throws for a name the team was not made with). */
  member(name: string): { client: TeamClient; token: string };
}

export function transportFor(baseUrl: string, protocol: Protocol, token?: string): Transport {
  const interceptors: Interceptor[] = token
    ? [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          return next(req);
        },
      ]
    : [];
  switch (protocol) {
    case "connect":
      return createConnectTransport({ baseUrl, httpVersion: "2", interceptors });
    case "connect-h1":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
    case "grpc":
      return createGrpcTransport({ baseUrl, interceptors });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors });
  }
}

/**
 * The default presence windows with a job that never runs within a test: the harness's
 * default, as suites compare a team's feed event by event, and a member seen by a test's calls
 * would otherwise be announced online (a 'presence' member event) at a moment the test does
 * not choose. Presence is tested in test/service/presence.test.ts, which sets its own.
 */
export const PRESENCE_QUIET: NonNullable<AppOptions["presence"]> = {
  onlineS: 60,
  offlineS: 900,
  taskOwnerTimeoutS: 0,
  intervalMs: 3_600_000,
};
/** The key test servers sign exports with (one per test process; servers of a file share it). */
export const TEST_EXPORT_KEY = generateKeyPairSync("ed25519").privateKey;

export const uniqueName = (prefix: string) => `${prefix}-${randomBytes(5).toString("hex")}`;

export async function startTestEnv(
  kind: DatabaseKind,
  testDb: TestDatabase,
  options: Partial<AppOptions> = {},
  serverOptions: Pick<ServerOptions, "keepaliveIntervalMs" | "slowConsumerTimeoutMs"> &
    Partial<Pick<ServerOptions, "logger">> = {},
): Promise<TestEnv & { close(): Promise<void> }> {
  const app = createApp({
    db: testDb.db,
    logger: silentLogger(),
    // Suites make teams by the dozen from one address: open CreateTeam's limits are tested
    // in test/service/create-team-limits.test.ts, off elsewhere.
    openCreateTeam: { perMinute: 0, burst: 1, maxTeams: 0 },
    presence: PRESENCE_QUIET,
    exportSigningKey: TEST_EXPORT_KEY,
    ...options,
  });
  await app.ready;
  const handler = app.nodeHandler();
  const server = await startServer({
    handler,
    rawStreams: app.rawStreams(),
    wholeBodies: app.wholeBodies(),
    host: "127.0.0.1",
    port: 0,
    logger: silentLogger(),
    metrics: app.metrics,
    ...serverOptions,
  });
  const client = (token?: string, protocol: Protocol = "connect") =>
    createClient(TeamService, transportFor(server.url, protocol, token));
  const env: TestEnv = {
    kind,
    db: testDb.db,
    app,
    server,
    client,
    async team(...teammates) {
      const name = uniqueName("team");
      const created = await client(options.adminToken).createTeam({ team: name });
      const lead = client(created.token);
      const members = new Map<string, { client: TeamClient; token: string }>();
      for (const mate of teammates) {
        const added = await lead.addMember({ name: mate });
        members.set(mate, { client: client(added.token), token: added.token });
      }
      const member = (mate: string) => {
        const found = members.get(mate);
        if (!found) throw new Error(`test team has no member "${mate}"`);
        return found;
      };
      return { name, lead, leadToken: created.token, member };
    },
  };
  return {
    ...env,
    async close() {
      await server.close(2_000, () => app.hub.endAll());
      await app.close();
    },
  };
}

/**
 * Runs the suite once per database kind (embedded, and PostgreSQL when reachable), each
 * over its own database and a real HTTP/2 server on a random port.
 */
export function describeEachDatabase(
  title: string,
  suite: (env: () => TestEnv, kind: DatabaseKind) => void,
  options: Partial<AppOptions> = {},
): void {
  for (const { kind, skip } of databaseKinds()) {
    describe.skipIf(skip)(`${title} [${kind}]`, () => {
      let testDb: TestDatabase | undefined;
      let env: (TestEnv & { close(): Promise<void> }) | undefined;
      beforeAll(async () => {
        testDb = await openTestDatabase(kind);
        env = await startTestEnv(kind, testDb, options);
      });
      afterAll(async () => {
        await env?.close();
        await testDb?.dispose();
      });
      suite(() => {
        if (!env) throw new Error("test environment not started");
        return env;
      }, kind);
    });
  }
}

/**
 * The title of a race test, saying what its result means on this kind of database: the
 * embedded one runs one transaction at a time, so races cannot happen there and its pass
 * is a functional check only (a missing row lock passes it); PostgreSQL's pass is the proof.
 */
export function raceTitle(kind: DatabaseKind, title: string): string {
  return kind === "postgres"
    ? `${title} (race proof)`
    : `${title} (functional check only: no concurrent transactions here)`;
}

/** Collects what an async iterable yields until `stop` says so (or it ends). */
export async function collect<T>(
  source: AsyncIterable<T>,
  stop: (items: T[]) => boolean,
): Promise<T[]> {
  const items: T[] = [];
  for await (const item of source) {
    items.push(item);
    if (stop(items)) break;
  }
  return items;
}
