import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { repoRoot, startServer, tempDataDir } from "../support/child-server.js";

/**
 * `npm run demo` as CI runs it: a child process that must walk through every step of the
 * protocols and exit 0; and that must fail (exit 1, nothing left running) when it cannot.
 */

interface Run {
  code: number | null;
  output: string;
}

function runDemo(
  env: Record<string, string>,
  command = ["npm", "run", "-s", "demo"],
): Promise<Run> {
  const base = { ...process.env };
  for (const name of ["TEAM_URL", "TEAM_TOKEN", "TEAM_ADMIN_TOKEN", "DEMO_TIMEOUT_MS"]) {
    delete base[name];
  }
  const [cmd = "npm", ...args] = command;
  const child = spawn(cmd, args, {
    cwd: repoRoot,
    env: { ...base, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    output += s;
  });
  child.stderr.setEncoding("utf8").on("data", (s: string) => {
    output += s;
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, output })));
}

const STEPS = [
  "✓ alice's first plan was rejected with feedback",
  "✓ alice resubmitted, the lead approved, alice inherited permission mode default",
  "✓ task notifications reached the lead with the seed's summaries",
  "✓ bob rejected a shutdown with a reason and kept working",
  "✓ alice approved her shutdown, was stopped and exited 0",
  "✓ bob approved the second shutdown, was stopped and exited 0",
  "✓ carol (an MCP client of team mcp) reported her task, approved her shutdown, was stopped, saw her token refused and exited 0",
  "✓ bob's first claim of e2e-suite was rejected with a reason",
  "✓ bob claimed e2e-suite again once the parser landed, and the lead approved",
  "✓ the lead assigned parser-refactor to alice",
  "✓ alice's first sign-off was rejected with feedback, the second approved: parser-refactor is done",
  "✓ bob handed e2e-suite to carol, who accepted over MCP; her stop released it to the lead",
  "✓ the lead made a five-task plan on the task list, each task waiting on the ones before",
  "✓ dave and erin raced for its one ready task: one claim held, the other refused (one-owner)",
  "✓ plan-1's sign-off made plan-2 ready, the lead was told, and the loser took it and completed it",
  "✓ dave and erin approved their shutdowns, were stopped and exited 0",
  // 18 requests (2 plans, 6 shutdowns, 4 claims, 1 assignment, 1 handoff, 4 sign-offs), their
  // 17 answers (an assignment has none) and 5 task notifications from members; and the race's
  // refused claim.
  "✓ the journal holds every protocol step (40 accepted, and the one refused: the race's losing claim)",
];

/** The teammates' process ids, from the transcript's "started (pid N)" lines. */
const pidsIn = (output: string) =>
  [...output.matchAll(/ started \(pid (\d+)\)/g)].map((m) => Number(m[1]));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("npm run demo", () => {
  it("walks through both protocols on its own throwaway server and exits 0", async () => {
    const run = await runDemo({});
    expect(run.code, run.output).toBe(0);
    for (const step of STEPS) expect(run.output).toContain(step);
    expect(run.output).toContain("demo passed: every step happened");
    // A transcript: every line timestamped, each envelope and state change shown.
    const lines = run.output
      .split("\n")
      .filter((l) => /^\d\d:\d\d:\d\d\.\d{3} +\+\d+\.\d{3}s {2}/.test(l));
    expect(lines.length).toBeGreaterThan(30);
    expect(run.output).toMatch(
      /server started at http:\/\/127\.0\.0\.1:\d+ \(throwaway embedded database\)/,
    );
    expect(run.output).toMatch(/team-lead +← #\d+ .* alice → team-lead {2}plan_approval_request:/);
    expect(run.output).toMatch(
      /alice +← #\d+ .* plan_approval_response req_\S+ rejected: too risky/,
    );
    expect(run.output).toMatch(/state +request req_\S+ \(shutdown team-lead → bob\): rejected/);
    expect(run.output).toContain("<task-notification>");
    expect(run.output).toMatch(/bob +← #\d+ .* task_claim_response req_\S+ rejected: the parser/);
    expect(run.output).toMatch(/alice +← #\d+ .* task_assign parser-refactor/);
    expect(run.output).toMatch(/team-lead +<result-signoff-request from="alice" to="team-lead"/);
    expect(run.output).toMatch(/alice +← #\d+ .* result_signoff_response req_\S+ rejected: add a/);
    expect(run.output).toMatch(
      /bob +← #\d+ .* carol → bob {2}task_handoff_response req_\S+ accepted/,
    );
    expect(run.output).toMatch(/carol +accepted e2e-suite from bob; get_task: .*owner +carol/);
    expect(run.output).toMatch(/state +alice exited with code 0/);
    expect(run.output).toMatch(/state +bob exited with code 0/);
    // carol only through the MCP tools: listed for a teammate, and revoked once she stopped.
    expect(run.output).toMatch(
      /carol +connected over MCP \(team mcp\); tools: send_message, wait_for_messages/,
    );
    expect(run.output).toMatch(/carol +next tool call: refused: unauthenticated: token revoked/);
    expect(run.output).toMatch(/state +carol exited with code 0/);
    // The plan on the task list: the race's loser told, and the server's ready notice.
    expect(run.output).toMatch(/(dave|erin) +lost the race for plan-1: one-owner: /);
    expect(run.output).toMatch(/team-lead +told (dave|erin) that plan-2 is ready/);
    expect(run.output).toContain("<status>ready</status>");
    // The five teammates (alice, bob, carol, dave, erin) were started and none is left running.
    expect(pidsIn(run.output)).toHaveLength(5);
    for (const pid of pidsIn(run.output)) expect(alive(pid)).toBe(false);
  }, 180_000);

  it("uses the server at TEAM_URL when it is set", async () => {
    const server = await startServer({ DATA_DIR: await tempDataDir() });
    const run = await runDemo({ TEAM_URL: server.url }, [
      process.execPath,
      "--import",
      "tsx",
      "demo/main.ts",
    ]);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`using ${server.url}`);
    for (const step of STEPS) expect(run.output).toContain(step);
  }, 180_000);

  it("exits 1 naming the missing steps when they cannot happen in time, and leaves no teammate running", async () => {
    const server = await startServer({ DATA_DIR: await tempDataDir() });
    const run = await runDemo({ TEAM_URL: server.url, DEMO_TIMEOUT_MS: "1500" }, [
      process.execPath,
      "--import",
      "tsx",
      "demo/main.ts",
    ]);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain("timed out after 1500 ms");
    expect(run.output).toContain("demo FAILED");
    expect(run.output).toMatch(/^✗ /m);
    // Teammates started before the timeout (at least one, at most all five) and none is left
    // running.
    const pids = pidsIn(run.output);
    expect(pids.length, run.output).toBeGreaterThan(0);
    expect(pids.length).toBeLessThanOrEqual(5);
    for (const pid of pids) expect(alive(pid)).toBe(false);
  }, 120_000);
});
