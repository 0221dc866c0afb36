import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { parseConfig } from "../../server/config.js";
import { MAX_TTL_MS, MIN_TTL_MS } from "../../server/domain/limits.js";
import { silentLogger } from "../../server/logger.js";
import { run } from "../../server/main.js";
import { createScratchPgDatabase, databaseKinds } from "../support/databases.js";
import { transportFor } from "../support/harness.js";
import { planRequest, shutdownRequest } from "../support/protocol-helpers.js";
import { assign, claimRequest, handoffRequest, signoffRequest } from "../support/task-helpers.js";

/** The error parseConfig throws (commander's, with exitOverride), and what it printed. */
function parseError(argv: string[], env: NodeJS.ProcessEnv) {
  const printed: string[] = [];
  const write = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    printed.push(String(chunk));
    return true;
  });
  try {
    parseConfig(argv, env);
  } catch (err) {
    return { err: err as Error & { code?: string; exitCode?: number }, printed: printed.join("") };
  } finally {
    write.mockRestore();
  }
  throw new Error(`parseConfig(${JSON.stringify(argv)}, ${JSON.stringify(env)}) accepted it`);
}

describe("config: per-kind request deadlines (SHUTDOWN_TTL_MS, PLAN_APPROVAL_TTL_MS)", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("defaults to 5 minutes for shutdown and 30 minutes for plan approval", () => {
    const c = parseConfig([], {});
    expect(c.shutdownTtlMs).toBe(300_000);
    expect(c.planApprovalTtlMs).toBe(1_800_000);
  });

  it("reads each variable on its own, including the bounds a per-request ttl may take", () => {
    expect(parseConfig([], { SHUTDOWN_TTL_MS: "2000" })).toMatchObject({
      shutdownTtlMs: 2_000,
      planApprovalTtlMs: 1_800_000,
    });
    expect(parseConfig([], { PLAN_APPROVAL_TTL_MS: "45000" })).toMatchObject({
      shutdownTtlMs: 300_000,
      planApprovalTtlMs: 45_000,
    });
    expect(
      parseConfig([], {
        SHUTDOWN_TTL_MS: String(MIN_TTL_MS),
        PLAN_APPROVAL_TTL_MS: String(MAX_TTL_MS),
      }),
    ).toMatchObject({ shutdownTtlMs: MIN_TTL_MS, planApprovalTtlMs: MAX_TTL_MS });
  });

  it("a flag wins over the environment", () => {
    const c = parseConfig(["--shutdown-ttl-ms", "7000", "--plan-approval-ttl-ms", "8000"], {
      SHUTDOWN_TTL_MS: "2000",
      PLAN_APPROVAL_TTL_MS: "3000",
    });
    expect(c).toMatchObject({ shutdownTtlMs: 7_000, planApprovalTtlMs: 8_000 });
  });

  it("refuses a value that is not a whole number of ms within [1 s, 7 days], naming the variable", () => {
    const bad = ["999", "0", "-1000", String(MAX_TTL_MS + 1), "1500.5", "abc", "5s", " "];
    for (const name of ["SHUTDOWN_TTL_MS", "PLAN_APPROVAL_TTL_MS"]) {
      for (const value of bad) {
        const { err, printed } = parseError([], { [name]: value });
        const what = `${name}=${JSON.stringify(value)}`;
        expect(err.code, what).toBe("commander.invalidArgument");
        expect(err.exitCode, what).not.toBe(0);
        expect(err.message, what).toContain(name);
        expect(err.message, what).toContain(`got "${value}"`);
        // What the operator sees on stderr names it too.
        expect(printed, what).toContain(name);
      }
    }
    // The same check for the flags.
    const { err } = parseError(["--plan-approval-ttl-ms", "10"], {});
    expect(err.code).toBe("commander.invalidArgument");
    expect(err.message).toContain("--plan-approval-ttl-ms");
    expect(err.message).toContain("PLAN_APPROVAL_TTL_MS");
  });
});

describe("config: the task protocols' deadlines (TASK_CLAIM_TTL_MS, TASK_HANDOFF_TTL_MS, RESULT_SIGNOFF_TTL_MS)", () => {
  const names = {
    TASK_CLAIM_TTL_MS: "taskClaimTtlMs",
    TASK_HANDOFF_TTL_MS: "taskHandoffTtlMs",
    RESULT_SIGNOFF_TTL_MS: "resultSignoffTtlMs",
  } as const;

  it("defaults to 10 minutes for a claim and a handoff, 30 for a sign-off; each variable on its own", () => {
    expect(parseConfig([], {})).toMatchObject({
      taskClaimTtlMs: 600_000,
      taskHandoffTtlMs: 600_000,
      resultSignoffTtlMs: 1_800_000,
    });
    for (const [name, field] of Object.entries(names)) {
      const c = parseConfig([], { [name]: "61000" });
      expect(c[field], name).toBe(61_000);
      for (const other of Object.values(names).filter((f) => f !== field)) {
        expect(c[other], `${name} leaves ${other}`).not.toBe(61_000);
      }
    }
    expect(
      parseConfig(["--task-claim-ttl-ms", "7000"], { TASK_CLAIM_TTL_MS: "2000" }).taskClaimTtlMs,
    ).toBe(7_000);
  });

  it("refuses a value outside [1 s, 7 days], naming the variable", () => {
    for (const name of Object.keys(names)) {
      for (const value of ["999", String(MAX_TTL_MS + 1), "1m"]) {
        const { err, printed } = parseError([], { [name]: value });
        expect(err.code, `${name}=${value}`).toBe("commander.invalidArgument");
        expect(err.message, `${name}=${value}`).toContain(name);
        expect(printed).toContain(name);
      }
    }
  });
});

describe("config: the permission protocol's deadline (PERMISSION_TTL_MS)", () => {
  it("defaults to 5 minutes; the variable and the flag set it, the flag first", () => {
    expect(parseConfig([], {}).permissionTtlMs).toBe(300_000);
    expect(parseConfig([], { PERMISSION_TTL_MS: "61000" }).permissionTtlMs).toBe(61_000);
    expect(
      parseConfig(["--permission-ttl-ms", "7000"], { PERMISSION_TTL_MS: "2000" }).permissionTtlMs,
    ).toBe(7_000);
  });

  it("refuses a value outside [1 s, 7 days], naming the variable", () => {
    for (const value of ["999", String(MAX_TTL_MS + 1), "1m"]) {
      const { err } = parseError([], { PERMISSION_TTL_MS: value });
      expect(err.code, value).toBe("commander.invalidArgument");
      expect(err.message, value).toContain("PERMISSION_TTL_MS");
    }
  });
});

const ms = (t: Timestamp | undefined) =>
  t ? Number(t.seconds) * 1000 + t.nanos / 1e6 : Number.NaN;

/**
 * The variables reach the server: run() (main.ts) built from parseConfig gives requests
 * without a ttl the configured deadline of their kind.
 */
for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`config -> server: per-kind default ttl [${kind}]`, () => {
    it("a server started with SHUTDOWN_TTL_MS, PLAN_APPROVAL_TTL_MS and the task protocols' variables uses them", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "tp-config-"));
      const scratch = kind === "postgres" ? await createScratchPgDatabase() : undefined;
      try {
        const config = parseConfig(["--port", "0", "--host", "127.0.0.1"], {
          SHUTDOWN_TTL_MS: "4000",
          PLAN_APPROVAL_TTL_MS: "9000",
          TASK_CLAIM_TTL_MS: "5000",
          TASK_HANDOFF_TTL_MS: "6000",
          RESULT_SIGNOFF_TTL_MS: "7000",
          DATA_DIR: dataDir,
          ...(scratch ? { DATABASE_URL: scratch.url } : {}),
        });
        const server = await run(config, silentLogger());
        try {
          const client = (token?: string) =>
            createClient(TeamService, transportFor(server.url, "connect", token));
          const created = await client().createTeam({ team: "config-ttl" });
          const lead = client(created.token);
          const alice = client((await lead.addMember({ name: "alice" })).token);
          const shutdown = await lead.send({ to: "alice", message: shutdownRequest() });
          const plan = await alice.send({ to: "team-lead", message: planRequest("p") });
          const claim = await alice.send({ to: "team-lead", message: claimRequest("t1") });
          await lead.send({ to: "alice", message: assign("t2") });
          const handoff = await alice.send({ to: "team-lead", message: handoffRequest("t2") });
          const signoff = await alice.send({ to: "team-lead", message: signoffRequest("t2") });
          for (const [requestId, ttlMs] of [
            [shutdown.requestId, 4_000],
            [plan.requestId, 9_000],
            [claim.requestId, 5_000],
            [handoff.requestId, 6_000],
            [signoff.requestId, 7_000],
          ] as const) {
            const r = (await lead.getRequest({ requestId })).request;
            // Exactly the configured ttl (both stamps are one clock reading), in whole µs.
            const deadline = Math.round((ms(r?.expiresAt) - ms(r?.createdAt)) * 1000);
            expect(deadline, requestId).toBe(ttlMs * 1000);
          }
        } finally {
          await server.stop();
        }
      } finally {
        await scratch?.drop();
        await rm(dataDir, { recursive: true, force: true });
      }
      // The embedded database first initialises its data folder on disk: hence the timeout.
    }, 120_000);
  });
}

describe("config: the slow-consumer cut (SLOW_CONSUMER_TIMEOUT_MS)", () => {
  it("defaults to 30 s, the value the configuration table of docs/operations.md gives, and reads the variable and the flag", async () => {
    const operations = await readFile(
      fileURLToPath(new URL("../../docs/operations.md", import.meta.url)),
      "utf8",
    );
    const row = operations.split("\n").find((l) => l.startsWith("| `SLOW_CONSUMER_TIMEOUT_MS`"));
    expect(row, "the configuration table of docs/operations.md has the row").toBeDefined();
    const documented = Number(/\| `(\d+)` \|/.exec(row ?? "")?.[1]);
    expect(parseConfig([], {}).slowConsumerTimeoutMs).toBe(30_000);
    expect(documented).toBe(30_000);
    expect(parseConfig([], { SLOW_CONSUMER_TIMEOUT_MS: "1500" }).slowConsumerTimeoutMs).toBe(1_500);
    expect(
      parseConfig(["--slow-consumer-timeout-ms", "2500"], { SLOW_CONSUMER_TIMEOUT_MS: "1500" })
        .slowConsumerTimeoutMs,
    ).toBe(2_500);
    const { err, printed } = parseError([], { SLOW_CONSUMER_TIMEOUT_MS: "soon" });
    expect(err.exitCode).toBe(1);
    expect(printed).toContain("SLOW_CONSUMER_TIMEOUT_MS");
  });
});

describe("config: the back-off after a slow-consumer cut (SLOW_CONSUMER_BACKOFF_MS)", () => {
  it("defaults to 5 s, the value the configuration table of docs/operations.md gives, and reads the variable and the flag", async () => {
    const operations = await readFile(
      fileURLToPath(new URL("../../docs/operations.md", import.meta.url)),
      "utf8",
    );
    const row = operations.split("\n").find((l) => l.startsWith("| `SLOW_CONSUMER_BACKOFF_MS`"));
    expect(row, "the configuration table of docs/operations.md has the row").toBeDefined();
    expect(Number(/\| `(\d+)` \|/.exec(row ?? "")?.[1])).toBe(5_000);
    expect(parseConfig([], {}).slowConsumerBackoffMs).toBe(5_000);
    expect(parseConfig([], { SLOW_CONSUMER_BACKOFF_MS: "0" }).slowConsumerBackoffMs).toBe(0);
    expect(
      parseConfig(["--slow-consumer-backoff-ms", "2500"], { SLOW_CONSUMER_BACKOFF_MS: "1500" })
        .slowConsumerBackoffMs,
    ).toBe(2_500);
  });
});

describe("lease ttls", () => {
  it("default to 10 minutes, at most 4 hours; each read from its variable", () => {
    expect(parseConfig([], {})).toMatchObject({ leaseTtlDefaultS: 600, leaseTtlMaxS: 14_400 });
    expect(parseConfig([], { LEASE_TTL_DEFAULT_S: "60", LEASE_TTL_MAX_S: "120" })).toMatchObject({
      leaseTtlDefaultS: 60,
      leaseTtlMaxS: 120,
    });
  });

  it("refuses a default above the maximum, naming both", () => {
    expect(() => parseConfig([], { LEASE_TTL_DEFAULT_S: "7200", LEASE_TTL_MAX_S: "3600" })).toThrow(
      /LEASE_TTL_DEFAULT_S \(7200\) must not exceed LEASE_TTL_MAX_S \(3600\)/,
    );
  });
});

describe("config: live leases per member (MAX_LEASES_PER_MEMBER)", () => {
  it("defaults to 64, the value the configuration table of docs/operations.md gives; the variable and the flag set it, 0 for no limit", async () => {
    const operations = await readFile(
      fileURLToPath(new URL("../../docs/operations.md", import.meta.url)),
      "utf8",
    );
    const row = operations.split("\n").find((l) => l.startsWith("| `MAX_LEASES_PER_MEMBER`"));
    expect(row, "the configuration table of docs/operations.md has the row").toBeDefined();
    expect(Number(/\| `(\d+)` +\|/.exec(row ?? "")?.[1])).toBe(64);
    expect(parseConfig([], {}).maxLeasesPerMember).toBe(64);
    expect(parseConfig([], { MAX_LEASES_PER_MEMBER: "0" }).maxLeasesPerMember).toBe(0);
    expect(
      parseConfig(["--max-leases-per-member", "8"], { MAX_LEASES_PER_MEMBER: "3" })
        .maxLeasesPerMember,
    ).toBe(8);
    const { err, printed } = parseError([], { MAX_LEASES_PER_MEMBER: "many" });
    expect(err.exitCode).toBe(1);
    expect(printed).toContain("MAX_LEASES_PER_MEMBER");
  });
});

describe("presence", () => {
  it("defaults to online 60 s, offline 900 s, the task-owner timeout off; each read from its variable", () => {
    expect(parseConfig([], {})).toMatchObject({
      presenceOnlineS: 60,
      presenceOfflineS: 900,
      taskOwnerTimeoutS: 0,
    });
    expect(
      parseConfig([], {
        PRESENCE_ONLINE_S: "5",
        PRESENCE_OFFLINE_S: "30",
        TASK_OWNER_TIMEOUT_S: "600",
      }),
    ).toMatchObject({ presenceOnlineS: 5, presenceOfflineS: 30, taskOwnerTimeoutS: 600 });
  });

  it("refuses an online window longer than the offline one, and a zero window, naming them", () => {
    expect(() => parseConfig([], { PRESENCE_ONLINE_S: "120", PRESENCE_OFFLINE_S: "60" })).toThrow(
      /PRESENCE_ONLINE_S \(120\) must not exceed PRESENCE_OFFLINE_S \(60\)/,
    );
    expect(() => parseConfig([], { PRESENCE_ONLINE_S: "0" })).toThrow(/PRESENCE_ONLINE_S/);
  });
});

describe("config: the largest bundle ImportTeam loads (IMPORT_MAX_BYTES)", () => {
  it("defaults to 4 GiB, the value the configuration table of docs/operations.md gives, and reads the variable and the flag", async () => {
    const operations = await readFile(
      fileURLToPath(new URL("../../docs/operations.md", import.meta.url)),
      "utf8",
    );
    const row = operations.split("\n").find((l) => l.startsWith("| `IMPORT_MAX_BYTES`"));
    expect(row, "the configuration table of docs/operations.md has the row").toBeDefined();
    const documented = Number(/\| `(\d+)` \|/.exec(row ?? "")?.[1]);
    expect(parseConfig([], {}).importMaxBytes).toBe(4 * 1024 ** 3);
    expect(documented).toBe(4 * 1024 ** 3);
    expect(parseConfig([], { IMPORT_MAX_BYTES: "1048576" }).importMaxBytes).toBe(1_048_576);
    expect(
      parseConfig(["--import-max-bytes", "2048"], { IMPORT_MAX_BYTES: "1048576" }).importMaxBytes,
    ).toBe(2_048);
    const { err, printed } = parseError([], { IMPORT_MAX_BYTES: "0" });
    expect(err.exitCode).toBe(1);
    expect(printed).toContain("IMPORT_MAX_BYTES");
  });
});
