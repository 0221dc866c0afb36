import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import net from "node:net";
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  type Interceptor,
} from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, inject, it } from "vitest";
import { RequestKind, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { type SubscribeResponse, TeamService } from "../../gen/team/v1/team_service_pb.js";

type TeamClient = Client<typeof TeamService>;

import { loadMigrations } from "../../server/store/migrate.js";
import {
  afterThisTest,
  type Exit,
  exitOf,
  freePort,
  type ServerProcess,
  START_TIMEOUT_MS,
  spawnServer,
  startServer,
  stopServer,
  tempDataDir,
  waitFor,
  withTimeout,
} from "../support/child-server.js";
import { createScratchPgDatabase, type DatabaseKind, databaseKinds } from "../support/databases.js";
import {
  planRequest,
  planResponse,
  shutdownRequest,
  shutdownResponse,
} from "../support/protocol-helpers.js";
import { envelopesOf, openSubscription } from "../support/subscription-reader.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

/** A generated gRPC client for the server at `baseUrl`, with an optional bearer token. */
function client(baseUrl: string, token?: string): TeamClient {
  const interceptors: Interceptor[] = token
    ? [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          return next(req);
        },
      ]
    : [];
  return createClient(TeamService, createGrpcTransport({ baseUrl, interceptors }));
}

const text = (t: string) => ({ kind: { case: "text" as const, value: t } });

async function connectErrorOf(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail");
}

/**
 * A stream the server refused after its GOAWAY (RST_STREAM REFUSED_STREAM) was never
 * processed (RFC 9113 8.7), and neither was a call whose connection was refused.
 */
function neverProcessed(ce: ConnectError): boolean {
  return /REFUSED_STREAM|ECONNREFUSED/.test(ce.rawMessage);
}

/**
 * connect-node reports REFUSED_STREAM as Internal when Node emits the stream's error before
 * its close (it maps the RST code to Unavailable only in the close handler); the call was
 * not processed and may be retried, which is what Unavailable says.
 */
function effectiveCode(ce: ConnectError): Code {
  return /REFUSED_STREAM/.test(ce.rawMessage) ? Code.Unavailable : ce.code;
}

/** Asserts a clean stop: exit code 0, one stop line, no call cut for exceeding the grace. */
function expectCleanStop(server: ServerProcess, exit: Exit): void {
  expect(exit, server.output()).toEqual({ code: 0, signal: null });
  expect(server.events("stop")).toHaveLength(1);
  expect(server.events("stop_grace_exceeded")).toEqual([]);
  expect(server.events("stop_failed")).toEqual([]);
}

/**
 * The configuration of a server over fresh, empty data of one kind, the same for every
 * process a test starts on it, and what its start line says about that data.
 */
async function freshData(
  kind: DatabaseKind,
): Promise<{ env: Record<string, string>; start: Record<string, unknown> }> {
  const dataDir = await tempDataDir();
  if (kind === "embedded") {
    return { env: { DATA_DIR: dataDir }, start: { database: "embedded", dataDir } };
  }
  const scratch = await createScratchPgDatabase();
  afterThisTest(() => scratch.drop());
  return { env: { DATABASE_URL: scratch.url, DATA_DIR: dataDir }, start: { database: "postgres" } };
}

describe("the server as a process", () => {
  for (const { kind, skip } of databaseKinds()) {
    it.skipIf(skip)(
      `${kind} database: serves, ends streams cleanly on SIGTERM, and keeps its data across a restart`,
      async () => {
        const data = await freshData(kind);
        const versions = (await loadMigrations()).map((m) => m.version);
        const first = await startServer(data.env);
        expect(first.events("start")).toHaveLength(1);
        expect(first.events("start")[0]).toMatchObject({
          ...data.start,
          migrationsApplied: versions,
          adminTokenRequired: false,
        });

        const created = await client(first.url).createTeam({ team: "durable" });
        const lead = client(first.url, created.token);
        const added = await lead.addMember({ name: "alice" });
        const sent = await lead.send({ to: "alice", message: text("before the restart") });
        expect(sent.seq).toBe(1n);

        // An open Subscribe stream, with the backlog delivered, when SIGTERM arrives.
        const received: SubscribeResponse[] = [];
        const stream = (async () => {
          for await (const event of client(first.url, added.token).subscribe({ afterSeq: 0n })) {
            received.push(event);
          }
        })();
        let streamError: unknown;
        const streamDone = stream.then(
          () => "ended" as const,
          (err) => {
            streamError = err;
            return "threw" as const;
          },
        );
        await waitFor("the backlog on the stream", 10_000, () =>
          received.some((e) => e.event.case === "envelope") ? true : undefined,
        );

        first.child.kill("SIGTERM");
        const outcome = await withTimeout("the stream to end", 15_000, streamDone, first);
        expect(streamError).toBeUndefined();
        expect(outcome).toBe("ended");
        expect(
          received.flatMap((e) => (e.event.case === "envelope" ? [e.event.value.seq] : [])),
        ).toEqual([1n]);
        expectCleanStop(first, await exitOf(first));
        expect(first.events("start")).toHaveLength(1);
        expect(first.events("signal")).toMatchObject([{ signal: "SIGTERM" }]);

        // Same data, new process: nothing to migrate, tokens and messages still there.
        const second = await startServer(data.env);
        expect(second.events("start")[0]).toMatchObject({ ...data.start, migrationsApplied: [] });
        const alice = client(second.url, added.token);
        const read = await alice.readInbox({ afterSeq: 0n });
        expect(read.envelopes.map((e) => [e.seq, e.from, e.to, e.message?.kind.value])).toEqual([
          [1n, "team-lead", "alice", "before the restart"],
        ]);
        expect(read.lastSeq).toBe(1n);
        const members = await client(second.url, created.token).listMembers({});
        expect(members.members.map((m) => m.name).sort()).toEqual(["alice", "team-lead"]);
        expectCleanStop(second, await stopServer(second));
      },
      60_000,
    );
  }

  it("a second server on the same data dir refuses to start; the first keeps serving", async () => {
    const dataDir = await tempDataDir();
    const first = await startServer({ DATA_DIR: dataDir });
    const created = await client(first.url).createTeam({ team: "first" });

    const second = spawnServer({ PORT: String(await freePort()), DATA_DIR: dataDir });
    const exit = await exitOf(second, START_TIMEOUT_MS);
    expect(exit.code, second.output()).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(second.events("start")).toEqual([]);
    // One plain line for the person who typed the command: no JSON record, no stack.
    expect(second.output()).toMatch(
      /^team-protocols: could not start: data directory .* is in use .*; stop it or set DATA_DIR to another folder$/m,
    );
    expect(second.output()).not.toMatch(/^\s+at /m);
    expect(second.events("start_failed")).toEqual([]);
    expect(exit.code).toBe(1);

    // The first still answers, reading and writing, and still owns its data dir.
    const lead = client(first.url, created.token);
    await lead.addMember({ name: "bob" });
    expect((await lead.send({ to: "bob", message: text("still here") })).seq).toBe(1n);
    expect((await lead.listMembers({})).members).toHaveLength(2);
    expect(first.child.exitCode).toBeNull();
    expectCleanStop(first, await stopServer(first));
  }, 60_000);

  it("after kill -9 on the embedded database, a new server starts at once and every acknowledged send is there", async () => {
    const dataDir = await tempDataDir();
    const first = await startServer({ DATA_DIR: dataDir });
    const created = await client(first.url).createTeam({ team: "crash" });
    const lead = client(first.url, created.token);
    const added = await lead.addMember({ name: "worker" });
    for (let i = 1; i <= 20; i++) await lead.send({ to: "worker", message: text(`m${i}`) });
    expect(await stopServer(first, "SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    // The dead holder's lock is taken over at once, not after it goes stale.
    const second = await startServer({ DATA_DIR: dataDir });
    const read = await client(second.url, added.token).readInbox({ limit: 100 });
    expect(read.envelopes.map((e) => e.message?.kind.value)).toEqual(
      Array.from({ length: 20 }, (_, i) => `m${i + 1}`),
    );
    await stopServer(second);
  }, 60_000);

  for (const { kind, skip } of databaseKinds()) {
    it.skipIf(skip)(
      `${kind} database: SIGTERM during a burst of Sends: every call ends, and every acknowledged message is durable`,
      async () => {
        const data = await freshData(kind);
        const first = await startServer(data.env);
        const created = await client(first.url).createTeam({ team: "burst" });
        const lead = client(first.url, created.token);
        const senders = Array.from({ length: 16 }, (_, i) => `s${i}`);
        const tokens: Record<string, string> = {};
        for (const name of senders) tokens[name] = (await lead.addMember({ name })).token;
        const alice = await lead.addMember({ name: "alice" });

        // Each sender sends one message after another until a call fails.
        const acked: { seq: bigint; text: string }[] = [];
        const failures: unknown[] = [];
        let attempted = 0;
        let signalled = false;
        let ackedAfterSignal = 0;
        const loops = senders.map(async (name) => {
          const c = client(first.url, tokens[name]);
          for (let i = 0; ; i++) {
            const body = `${name}:${i}`;
            attempted++;
            try {
              const res = await c.send({ to: "alice", message: text(body) });
              acked.push({ seq: res.seq, text: body });
              if (signalled) ackedAfterSignal++;
            } catch (err) {
              failures.push(err);
              return;
            }
          }
        });
        await waitFor(
          "100 acknowledged sends",
          20_000,
          () => {
            if (failures.length > 0) throw ConnectError.from(failures[0]);
            return acked.length >= 100 ? true : undefined;
          },
          first,
        );
        first.child.kill("SIGTERM");
        signalled = true;
        await withTimeout("every Send to end", 20_000, Promise.all(loops), first);
        expectCleanStop(first, await exitOf(first));

        // Each loop ended with one failure, and only with the codes of a stopping server.
        expect(failures).toHaveLength(senders.length);
        const errors = failures.map((err) => ConnectError.from(err));
        const described = errors.map((ce) => `${Code[ce.code]}: ${ce.rawMessage}`).join("\n");
        for (const ce of errors) {
          expect([Code.Unavailable, Code.Canceled, Code.Aborted], described).toContain(
            effectiveCode(ce),
          );
        }
        // Some calls were in flight when the signal came, and were answered, not cut.
        expect(ackedAfterSignal).toBeGreaterThan(0);

        const second = await startServer(data.env);
        const read = await client(second.url, alice.token).readInbox({ afterSeq: 0n, limit: 1000 });
        const stored = read.envelopes.map((e) => ({ seq: e.seq, text: e.message?.kind.value }));
        expect(stored.length).toBeLessThan(1000); // one page holds it all
        // seqs 1..N without gaps...
        expect(stored.map((m) => m.seq)).toEqual(
          Array.from({ length: stored.length }, (_, i) => BigInt(i + 1)),
        );
        // ...every acknowledged send at the seq it was given...
        const bySeq = new Map(stored.map((m) => [m.seq, m.text]));
        for (const a of acked) expect(bySeq.get(a.seq)).toBe(a.text);
        // ...and beyond them at most the failed calls whose answer may have been lost (a refused
        // connection or stream was never processed, so it cannot have stored anything).
        const maybeCommitted = errors.filter((ce) => !neverProcessed(ce)).length;
        expect(stored.length).toBeGreaterThanOrEqual(acked.length);
        expect(stored.length - acked.length, described).toBeLessThanOrEqual(maybeCommitted);
        expect(attempted).toBe(acked.length + failures.length);
        expectCleanStop(second, await stopServer(second));
      },
      60_000,
    );
  }

  for (const { kind, skip } of databaseKinds()) {
    it.skipIf(skip)(
      `${kind} database: pending protocol requests survive a restart of the server process and are answered after it`,
      async () => {
        const data = await freshData(kind);
        const first = await startServer(data.env);
        const created = await client(first.url).createTeam({ team: "requests" });
        const added = await client(first.url, created.token).addMember({ name: "alice" });
        const shutdown = await client(first.url, created.token).send({
          to: "alice",
          message: shutdownRequest("the work is done"),
        });
        const plan = await client(first.url, added.token).send({
          to: "team-lead",
          message: planRequest("1. migrate\n2. test"),
        });
        const before = await Promise.all(
          [shutdown.requestId, plan.requestId].map(
            async (requestId) =>
              (await client(first.url, created.token).getRequest({ requestId })).request,
          ),
        );
        expectCleanStop(first, await stopServer(first));

        const second = await startServer(data.env);
        expect(second.events("start")[0]).toMatchObject({ ...data.start, migrationsApplied: [] });
        const lead = client(second.url, created.token);
        const alice = client(second.url, added.token);

        // Both records as they were, to the timestamp, still pending, each party sees its own.
        const shutdownRecord = (await alice.getRequest({ requestId: shutdown.requestId })).request;
        const planRecord = (await lead.getRequest({ requestId: plan.requestId })).request;
        expect([shutdownRecord, planRecord]).toEqual(before);
        expect(shutdownRecord).toMatchObject({
          kind: RequestKind.SHUTDOWN,
          status: RequestStatus.PENDING,
          from: "team-lead",
          to: "alice",
          request: shutdownRequest("the work is done"),
        });
        expect(shutdownRecord?.response).toBeUndefined();
        expect(planRecord).toMatchObject({
          kind: RequestKind.PLAN_APPROVAL,
          status: RequestStatus.PENDING,
          from: "alice",
          to: "team-lead",
          request: planRequest("1. migrate\n2. test"),
        });
        expect(planRecord?.response).toBeUndefined();

        // The lead approves the plan; alice, the requester, gets the answer on her stream.
        const aliceStream = openSubscription(alice, { afterSeq: 1n });
        try {
          await lead.send({ to: "alice", message: planResponse(plan.requestId, true, "go ahead") });
          const [answer] = envelopesOf(await aliceStream.envelopes(1));
          expect(answer).toMatchObject({
            from: "team-lead",
            to: "alice",
            requestId: plan.requestId,
            message: planResponse(plan.requestId, true, "go ahead"),
          });
        } finally {
          aliceStream.close();
        }
        const planAfter = (await alice.getRequest({ requestId: plan.requestId })).request;
        expect(planAfter).toMatchObject({
          status: RequestStatus.APPROVED,
          response: planResponse(plan.requestId, true, "go ahead"),
        });
        expect(planAfter?.resolvedAt).toBeDefined();

        // alice approves the shutdown; the lead, the requester, gets the answer on its stream.
        const leadStream = openSubscription(lead, { afterSeq: 1n });
        try {
          await alice.send({
            to: "team-lead",
            message: shutdownResponse(shutdown.requestId, true),
          });
          const [answer] = envelopesOf(await leadStream.envelopes(1));
          expect(answer).toMatchObject({
            from: "alice",
            to: "team-lead",
            requestId: shutdown.requestId,
            message: shutdownResponse(shutdown.requestId, true),
          });
        } finally {
          leadStream.close();
        }
        const shutdownAfter = (await lead.getRequest({ requestId: shutdown.requestId })).request;
        expect(shutdownAfter).toMatchObject({
          status: RequestStatus.APPROVED,
          response: shutdownResponse(shutdown.requestId, true),
        });
        expect(shutdownAfter?.resolvedAt).toBeDefined();
        expectCleanStop(second, await stopServer(second));
      },
      60_000,
    );
  }

  it.skipIf(inject("pgAdminUrl") === "")(
    "DATABASE_URL: serves from PostgreSQL and leaves DATA_DIR alone",
    async () => {
      const scratch = await createScratchPgDatabase();
      afterThisTest(() => scratch.drop());
      const dataDir = await tempDataDir();
      const server = await startServer({ DATABASE_URL: scratch.url, DATA_DIR: dataDir });
      const start = server.events("start")[0];
      expect(start).toMatchObject({
        database: "postgres",
        migrationsApplied: (await loadMigrations()).map((m) => m.version),
      });
      expect(start).not.toHaveProperty("dataDir");

      const created = await client(server.url).createTeam({ team: "on-postgres" });
      const lead = client(server.url, created.token);
      const added = await lead.addMember({ name: "alice" });
      await lead.send({ to: "alice", message: text("hi") });
      const read = await client(server.url, added.token).readInbox({});
      expect(read.envelopes.map((e) => e.message?.kind.value)).toEqual(["hi"]);
      expect(existsSync(dataDir)).toBe(false);
      expectCleanStop(server, await stopServer(server));
    },
    60_000,
  );

  it("TEAM_ADMIN_TOKEN: CreateTeam needs it as a bearer token", async () => {
    const dataDir = await tempDataDir();
    const server = await startServer({ DATA_DIR: dataDir, TEAM_ADMIN_TOKEN: "secret" });
    expect(server.events("start")[0]).toMatchObject({ adminTokenRequired: true });

    const anonymous = await connectErrorOf(client(server.url).createTeam({ team: "t1" }));
    expect(anonymous.code).toBe(Code.Unauthenticated);
    const wrong = await connectErrorOf(client(server.url, "wrong").createTeam({ team: "t1" }));
    expect(wrong.code).toBe(Code.Unauthenticated);

    const created = await client(server.url, "secret").createTeam({ team: "t1" });
    expect(created.token).toMatch(/^tp_/);
    expect(created.lead?.name).toBe("team-lead");
    // The lead's own token works for the other calls; the admin token is only for CreateTeam.
    expect((await client(server.url, created.token).listMembers({})).members).toHaveLength(1);
    expect(server.output()).not.toContain("secret");
    expectCleanStop(server, await stopServer(server));
  }, 60_000);

  it.skipIf(databaseKinds().some((k) => k.kind === "postgres" && k.skip))(
    "beyond loopback without TEAM_ADMIN_TOKEN, the server warns once that CreateTeam is open",
    async () => {
      // On PostgreSQL: a start in seconds (what is tested is the log line, not the database).
      const scratch = await createScratchPgDatabase("template");
      try {
        const env = { DATABASE_URL: scratch.url, DATA_DIR: await tempDataDir() };
        // startServer() expects 127.0.0.1: spawned here, and its start line awaited.
        const server = spawnServer({ ...env, HOST: "0.0.0.0", PORT: String(await freePort()) });
        await waitFor("the start line", START_TIMEOUT_MS, () => server.events("start")[0], server);
        const warnings = server.events("create_team_open");
        expect(warnings).toHaveLength(1);
        expect(warnings[0]?.msg).toMatch(/set TEAM_ADMIN_TOKEN when listening beyond loopback/);
        expectCleanStop(server, await stopServer(server));
        // On loopback (the default) it does not.
        const local = await startServer(env);
        expect(local.events("create_team_open")).toHaveLength(0);
        expectCleanStop(local, await stopServer(local));
      } finally {
        await scratch.drop();
      }
    },
    120_000,
  );

  it("says what it is doing while the database starts, then where it listens", async () => {
    const dataDir = await tempDataDir();
    const server = await startServer({ DATA_DIR: dataDir });
    const [starting] = server.events("starting");
    expect(starting).toMatchObject({ database: "embedded", dataDir });
    expect(starting?.msg).toContain(`opening the embedded database in ${dataDir}`);
    const logs = server.logs();
    expect(logs.indexOf(starting as never)).toBeLessThan(
      logs.findIndex((l) => l.event === "start"),
    );
    expect(server.events("start")[0]?.msg).toBe(`team-protocols listening on ${server.url}`);
    expectCleanStop(server, await stopServer(server));
  }, 60_000);

  it("a taken port is refused before the database is opened, in one plain line", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", () => resolve()));
    afterThisTest(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const { port } = taken.address() as net.AddressInfo;
    const dataDir = await tempDataDir();
    const server = spawnServer({ PORT: String(port), DATA_DIR: dataDir });
    const exit = await exitOf(server, START_TIMEOUT_MS);
    expect(exit.code, server.output()).toBe(1);
    expect(server.output()).toMatch(
      new RegExp(`^team-protocols: could not start: port ${port} on 127.0.0.1 is taken`, "m"),
    );
    expect(server.events("starting")).toEqual([]);
    expect(existsSync(dataDir)).toBe(false);
  }, 60_000);

  it("SLOW_CONSUMER_TIMEOUT_MS reaches the server: a stalled subscriber is cut, and the cut is logged", async () => {
    const dataDir = await tempDataDir();
    // 250 ms instead of the default 30 s. No duration is asserted: the wait below gives up
    // after 20 s, before the default could cut, so a main.ts that did not pass the value on
    // fails it.
    const server = await startServer({
      DATA_DIR: dataDir,
      SLOW_CONSUMER_TIMEOUT_MS: "250",
      HEARTBEAT_INTERVAL_MS: "100",
    });
    const proxy = await startTcpProxy(Number(new URL(server.url).port));
    afterThisTest(() => proxy.close());
    const created = await client(server.url).createTeam({ team: "stalls" });
    const lead = client(server.url, created.token);
    const added = await lead.addMember({ name: "stalled" });
    const stalled = openSubscription(client(proxy.url, added.token), { afterSeq: 0n });
    afterThisTest(async () => stalled.close());
    // A heartbeat came through the proxy: the stream is open; from now on nothing passes.
    await stalled.next();
    proxy.stall("to-client");
    // 40 x 48 KiB: far more than the client's 64 KiB flow-control window.
    // Random text: a response may be compressed, and repeated letters would shrink to nothing.
    const body = randomBytes(36 * 1024).toString("base64");
    for (let i = 0; i < 40; i++) await lead.send({ to: "stalled", message: text(`${i}:${body}`) });
    const [cut] = await waitFor(
      "the slow-consumer cut line",
      20_000,
      () => {
        const lines = server.events("slow_consumer_cut");
        return lines.length > 0 ? lines : undefined;
      },
      server,
    );
    expect(cut).toMatchObject({
      path: "/team.v1.TeamService/Subscribe",
      msg: "cut a response whose client stopped reading; it can resume from its last seq",
    });
    expectCleanStop(server, await stopServer(server));
  }, 60_000);

  it("an invalid PORT exits non-zero without starting", async () => {
    const servers = await Promise.all(
      ["abc", "-1", "1.5", "70000", ""].map(async (port) => {
        const dataDir = await tempDataDir();
        return { port, dataDir, server: spawnServer({ PORT: port, DATA_DIR: dataDir }) };
      }),
    );
    for (const { port, dataDir, server } of servers) {
      const exit = await exitOf(server, START_TIMEOUT_MS);
      expect(exit.code, `PORT=${port}: ${server.output()}`).not.toBe(0);
      expect(exit.code, `PORT=${port}`).not.toBeNull();
      expect(server.events("start"), `PORT=${port}`).toEqual([]);
      // Refused while reading the configuration, before the database is opened, with a
      // message naming the variable.
      expect(existsSync(dataDir), `PORT=${port}`).toBe(false);
      expect(server.output(), `PORT=${port}`).toMatch(/PORT .*must be a whole number/);
    }
  }, 60_000);
});
