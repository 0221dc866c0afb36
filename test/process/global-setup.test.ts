import { spawn } from "node:child_process";
import { describe, expect, inject, it } from "vitest";
import config from "../../vitest.config.js";
import { freePort, repoRoot } from "../support/child-server.js";

interface SetupRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** What the setup provided, when it returned. */
  provided: Record<string, unknown> | undefined;
}

/**
 * The global setup in a child process, with the caller's CI and TEST_DATABASE_URL removed
 * and `env` set: the test's own environment is never changed.
 */
function runSetup(env: Record<string, string>): Promise<SetupRun> {
  const base = { ...process.env };
  delete base.CI;
  delete base.TEST_DATABASE_URL;
  delete base.ALLOW_EMBEDDED_ONLY;
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/support/global-setup-runner.ts"],
    {
      cwd: repoRoot,
      env: { ...base, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 55_000);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      const line = stdout.split("\n").find((l) => l.startsWith("PROVIDED "));
      const provided = line ? JSON.parse(line.slice("PROVIDED ".length)) : undefined;
      resolve({ code, stdout, stderr, provided });
    });
  });
}

/** A PostgreSQL URL nobody listens at: a port that was free a moment ago. */
async function unreachableUrl(): Promise<string> {
  return `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
}

describe("the global setup (is PostgreSQL there?)", () => {
  it("is the suite's global setup", () => {
    expect(config.test?.globalSetup).toEqual(["test/support/global-setup.ts"]);
  });

  it("PostgreSQL unreachable, CI unset: lets the run go on, then ends it with a line saying the race proofs did not run, and fails it", async () => {
    const url = await unreachableUrl();
    const run = await runSetup({ TEST_DATABASE_URL: url });
    expect(run.provided).toMatchObject({ pgAdminUrl: "" }); // the run went on...
    const last = run.stdout.trim().split("\n").at(-1);
    expect(last).toBe(
      `*** The race proofs did NOT run: PostgreSQL was not reachable at ${url}; ` +
        "the embedded database's passes of them are functional checks only.",
    );
    expect(run.code).not.toBe(0); // ...and fails at its end
    expect(run.code).not.toBeNull();
    expect(run.stderr).toContain("or set ALLOW_EMBEDDED_ONLY=1");
  }, 60_000);

  it("PostgreSQL unreachable, CI unset, ALLOW_EMBEDDED_ONLY=1: says plainly that the PostgreSQL suite is skipped, and passes", async () => {
    const url = await unreachableUrl();
    const run = await runSetup({ TEST_DATABASE_URL: url, ALLOW_EMBEDDED_ONLY: "1" });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split("\n").at(-1)).toMatch(/^\*\*\* The race proofs did NOT run/);
    expect(run.stdout).toContain(
      `SKIPPING the PostgreSQL suite: PostgreSQL is not reachable at ${url}`,
    );
    expect(run.stdout).toMatch(/ECONNREFUSED/);
    expect(run.stdout).toContain("Only the embedded-database suite runs");
    // "" is what skips the PostgreSQL suites (databaseKinds, it.skipIf).
    expect(run.provided).toMatchObject({ pgAdminUrl: "", pgTemplateDatabase: "" });
    expect(run.provided?.embeddedTemplatePath).toMatch(/embedded\.tar$/);
  }, 60_000);

  it("PostgreSQL unreachable, CI=true: fails the run instead of skipping", async () => {
    const url = await unreachableUrl();
    const run = await runSetup({ TEST_DATABASE_URL: url, CI: "true" });
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull(); // exited, not killed by the timeout
    expect(run.stderr).toContain(`PostgreSQL is not reachable at ${url}`);
    expect(run.stderr).toContain("the PostgreSQL suite is mandatory under CI=true");
    expect(run.stdout).not.toMatch(/skipping/i);
    expect(run.provided).toBeUndefined();
  }, 60_000);

  it.skipIf(inject("pgAdminUrl") === "")(
    "PostgreSQL reachable, CI=true: provides its URL and skips nothing",
    async () => {
      const url = inject("pgAdminUrl");
      const run = await runSetup({ TEST_DATABASE_URL: url, CI: "true" });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).not.toMatch(/skipping/i);
      expect(run.provided).toMatchObject({ pgAdminUrl: url });
      expect(run.provided?.pgTemplateDatabase).toMatch(/^tp_template_[0-9a-f]{12}$/);
    },
    60_000,
  );
});
