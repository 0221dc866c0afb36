import { randomBytes } from "node:crypto";
import { createTeamClient } from "../client/team-client.js";
import { type Check, checkSteps } from "./checks.js";
import { type LeadLog, runLead } from "./lead.js";
import { type DemoServer, startDemoServer } from "./server.js";
import { startTeammate, stopTeammate, type TeammateProcess } from "./teammate-process.js";
import { createTranscript } from "./transcript.js";

/**
 * `npm run demo`: a lead (this process) and three scripted teammates (child processes; carol
 * only through the MCP tools of `team mcp`, as an LLM agent would) walk
 * through the protocols on a real server: a plan rejected with feedback, resubmitted and
 * approved; a task claim rejected with a reason and another approved; a task assigned; a
 * handoff accepted (over MCP); a result sign-off rejected with feedback, then approved;
 * task notifications; a shutdown rejected with a reason; shutdowns approved and the
 * teammates exiting. Beside it, a five-task plan on the task list: dave and erin race for its
 * one ready task, and the loser takes the next one when the winner's sign-off unblocks it. Exits 0 only if every step is confirmed by the server, within
 * DEMO_TIMEOUT_MS (default 120 s). Uses TEAM_URL when set, else its own throwaway server.
 */
const timeoutMs = Number(process.env.DEMO_TIMEOUT_MS ?? 120_000);
const transcript = createTranscript();
const stop = new AbortController();
const deadline = setTimeout(() => {
  transcript.state(`timed out after ${timeoutMs} ms`);
  stop.abort();
}, timeoutMs);
// Ctrl-C or a kill: stop the teammates and delete the throwaway database before exiting.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stop.abort());

let server: DemoServer | undefined;
const teammates: TeammateProcess[] = [];
let checks: Check[] = [];
try {
  if (!process.env.TEAM_URL) server = await startDemoServer();
  const url = server?.url ?? (process.env.TEAM_URL as string);
  transcript.state(
    server ? `server started at ${url} (throwaway embedded database)` : `using ${url}`,
  );

  const team = `demo-${randomBytes(3).toString("hex")}`;
  const admin = createTeamClient({ baseUrl: url, token: process.env.TEAM_ADMIN_TOKEN });
  const created = await admin.createTeam(team, { leadPermissionMode: "plan" });
  const lead = admin.withToken(created.token);
  transcript.state(`team ${team} created; lead team-lead in permission mode plan`);
  for (const [name, role] of [
    ["alice", "planner"],
    ["bob", "tester"],
    ["carol", "mcp"],
    ["dave", "racer"],
    ["erin", "racer"],
  ] as const) {
    if (stop.signal.aborted) break;
    const { token } = await lead.addMember(name);
    transcript.state(`${name} added`);
    teammates.push(startTeammate({ name, role, url, token, transcript }));
  }
  // A teammate that dies early ends the walkthrough at once instead of at the deadline.
  for (const t of teammates) void t.exited.then((code) => code !== 0 && stop.abort());

  let log: LeadLog = {
    plans: [],
    taskNotifications: [],
    shutdowns: [],
    race: { winner: "", loser: "" },
  };
  if (!stop.signal.aborted) log = await runLead(lead, transcript, stop.signal);
  const exitCodes: Record<string, number | null | undefined> = {};
  const aborted = new Promise((resolve) => {
    if (stop.signal.aborted) resolve(undefined);
    stop.signal.addEventListener("abort", resolve, { once: true });
  });
  await Promise.race([
    Promise.all(teammates.map(async (t) => (exitCodes[t.name] = await t.exited))),
    aborted,
  ]);
  checks = await checkSteps(lead, log, exitCodes);
} catch (err) {
  transcript.state(`failed: ${(err as Error).message}`);
} finally {
  clearTimeout(deadline);
  await Promise.all(teammates.map(stopTeammate));
  await server?.stop();
}

const passed = checks.length > 0 && checks.every((c) => c.ok);
process.stdout.write("\n");
for (const c of checks) process.stdout.write(`${c.ok ? "✓" : "✗"} ${c.step}\n`);
process.stdout.write(passed ? "demo passed: every step happened\n" : "demo FAILED\n");
process.exitCode = passed ? 0 : 1;
