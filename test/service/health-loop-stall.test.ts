import pino from "pino";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { HealthCheckResponse_ServingStatus as Status } from "../../gen/health/v1/health_pb.js";
import type { HealthMonitor } from "../../server/health/health-monitor.js";
import { describeEachDatabase, type TestEnv } from "../support/harness.js";
import { type ProxiedPostgresEnv, startBehindProxy } from "../support/proxied-postgres.js";
import type { TcpProxy } from "../support/tcp-proxy.js";
import { waitFor } from "../support/wait.js";

// Pings often and with a short deadline, so that a stall of our own loop spans many of them.
const HEALTH = { pingIntervalMs: 20, pingTimeoutMs: 100 };
// The stall test's deadline is longer: there a real PostgreSQL, shared with the suite's other
// files, must answer every ping in time for the whole test, and under CI's load one ping in
// a few hundred took longer than 100 ms of free loop (a true flip, not the stall's).
const STALL_HEALTH = { pingIntervalMs: 20, pingTimeoutMs: 400 };

/** Blocks this process's event loop (the app runs in it) for `ms`. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning: nothing else of the process runs meanwhile
  }
}

/** Resolves at the health monitor's next change of status. */
const nextChange = (health: HealthMonitor) =>
  health.changed(health.version, new AbortController().signal);

// The proof is PostgreSQL's: its ping's reply waits in a socket while the loop is blocked.
// The embedded database answers in-process, so there the test is a functional check.
describeEachDatabase(
  "health while our own event loop is stalled",
  (env) => {
    it("stays SERVING through loop stalls several times the ping deadline, with pings in flight", async () => {
      const health = env().app.health;
      expect(health.status("")).toBe(Status.SERVING);
      const version = health.version;
      // The database's pings, observed (each still runs): the background pings that were due
      // or in flight during a stall have settled once two pings begun after it have.
      const pings = vi.spyOn(env().db, "ping");
      try {
        for (let i = 0; i < 5; i++) {
          // A ping is in flight (and its deadline armed) when the loop stops.
          const probing = health.refresh();
          busyWait(4 * STALL_HEALTH.pingTimeoutMs);
          const begunBefore = pings.mock.calls.length;
          await probing;
          expect(health.status(""), `after stall ${i + 1}`).toBe(Status.SERVING);
          await waitFor(
            "two background pings after the stall",
            () => pings.mock.calls.length >= begunBefore + 2,
            { intervalMs: 5 },
          );
          await Promise.allSettled(pings.mock.results.map((r) => r.value));
          expect(health.status(""), `after the pings that followed stall ${i + 1}`).toBe(
            Status.SERVING,
          );
        }
      } finally {
        pings.mockRestore();
      }
      // Not flipped even for a moment: any change of status bumps the version.
      expect(health.version).toBe(version);
    });
  },
  { health: STALL_HEALTH },
);

/** The same server over a proxy to PostgreSQL, so that the database can really go away. */
describe.skipIf(inject("pgAdminUrl") === "")("health in a real outage [postgres]", () => {
  let proxied: ProxiedPostgresEnv;
  let proxy: TcpProxy;
  let env: TestEnv & { close(): Promise<void> };

  beforeAll(async () => {
    proxied = await startBehindProxy({ health: HEALTH });
    ({ env, proxy } = proxied);
  });

  afterAll(async () => {
    await proxied?.close();
  });

  it("a database that stops answering (loop free) still turns it NOT_SERVING, and back", async () => {
    const health = env.app.health;
    expect(health.status("")).toBe(Status.SERVING);
    // The database host goes silent: pings hang, and the loop is free to see the deadline.
    const down = nextChange(health);
    proxy.stall("both");
    await down;
    expect(health.status("")).toBe(Status.NOT_SERVING);
    // The hung ping's bytes were dropped, so its connection never answers again: drop it
    // (the proxy resets its connections) before the database comes back.
    await proxy.cut();
    const up = nextChange(health);
    await proxy.restore();
    await up;
    expect(health.status("")).toBe(Status.SERVING);
  });

  it("a database that refuses connections turns it NOT_SERVING, also while the loop stalls", async () => {
    const health = env.app.health;
    expect(health.status("")).toBe(Status.SERVING);
    const down = nextChange(health);
    await proxy.cut();
    busyWait(4 * HEALTH.pingTimeoutMs);
    await down;
    expect(health.status("")).toBe(Status.NOT_SERVING);
    const up = nextChange(health);
    await proxy.restore();
    await up;
    expect(health.status("")).toBe(Status.SERVING);
  });
});

/**
 * A ping on a connection that went silent (no reset, no FIN: a black hole) is never answered.
 * The probe runs one ping at a time, so only the driver's client-side timeout (pg's
 * query_timeout, DB_STATEMENT_TIMEOUT_MS + 5 s) ends it; without it the probe would join the
 * hung ping for ever and health would never come back.
 */
describe.skipIf(inject("pgAdminUrl") === "")(
  "a health ping on a black-holed connection [postgres]",
  () => {
    it("turns NOT_SERVING at the ping's own deadline, and SERVING again once the database answers: the hung ping ended by the client-side timeout", async () => {
      const logged: { event?: string; err?: { message?: string } }[] = [];
      const logger = pino(
        { level: "info" },
        { write: (line: string) => logged.push(JSON.parse(line)) },
      );
      // A short statement timeout, so that the client-side one comes 5 s after it.
      const proxied = await startBehindProxy(
        { health: HEALTH, logger },
        { statementTimeoutMs: 500 },
      );
      try {
        const health = proxied.env.app.health;
        expect(health.status("")).toBe(Status.SERVING);
        const down = nextChange(health);
        proxied.proxy.stall("both");
        await down;
        expect(health.status("")).toBe(Status.NOT_SERVING);
        // The status went at the ping's deadline (the loop-free 100 ms), not at the end of the
        // hung ping.
        const unreachable = logged.filter((l) => l.event === "db_unreachable");
        expect(unreachable[0]?.err?.message).toMatch(/did not answer a ping in 100 ms/);
        // Bytes pass again, but the hung ping's were dropped: nothing will ever answer it, and
        // nothing resets its connection. A new ping runs only once it ended.
        const up = nextChange(health);
        await proxied.proxy.restore();
        await up;
        expect(health.status("")).toBe(Status.SERVING);
      } finally {
        await proxied.close();
      }
    });
  },
);
