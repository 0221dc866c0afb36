import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemberStatus, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import { repoRoot, withTimeout } from "../support/child-server.js";
import { type DatabaseKind, databaseKinds, openTestDatabase } from "../support/databases.js";
import { startTestEnv, type TeamClient, type TestEnv } from "../support/harness.js";
import { inbox, planResponse, shutdownRequest, text } from "../support/protocol-helpers.js";
import { pythonPrerequisitesFor } from "../support/python-prerequisites.js";
import {
  blocksUnder,
  blockUnder,
  type CodeBlock,
  callsServerStream,
  findShown,
  jsonObjects,
  markdownBlocks,
  RequestIds,
  runBash,
  type ShellResult,
  shellSteps,
  shownObjects,
  shownRefusal,
} from "../support/readme-samples.js";
import { sleep } from "../support/wait.js";

/**
 * The samples of the README and docs/, read from the Markdown files and run as written against
 * a real server that this file starts, on each database kind: the README's tour, the flows of
 * docs/protocols.md and the TypeScript handshake of docs/agents.md one after another on one
 * server, as a reader who follows the links would. What is replaced, and only that: the
 * documented address 127.0.0.1:8080 by the test server's; `tp_...` by the token the sample says
 * it stands for; example request ids (`req_sCel...`) by the ids the server returned; the
 * TypeScript sample's import specifier "./client/..." by the repo's path to it.
 */

const DOCUMENTED_ADDRESS = "127.0.0.1:8080";
const STEP_TIMEOUT_MS = 30_000;
const readme = markdownBlocks("README.md");
const protocols = markdownBlocks("docs/protocols.md");
const agents = markdownBlocks("docs/agents.md");

async function withServer(kind: DatabaseKind, run: (env: TestEnv) => Promise<void>) {
  const testDb = await openTestDatabase(kind);
  try {
    const env = await startTestEnv(kind, testDb);
    try {
      await run(env);
    } finally {
      await env.close();
    }
  } finally {
    await testDb.dispose();
  }
}

const withAddress = (code: string, env: TestEnv) =>
  code.replaceAll(DOCUMENTED_ADDRESS, new URL(env.server.url).host);

/**
 * Runs a shell sample step by step from the repo root with bash: each command after the
 * definitions above it, with the tokens it needs exported. Checks each command exits 0, or
 * with a shown refusal's code times 8 (what docs/agents.md says buf curl exits with), and
 * prints what the comments below it show; a server stream is stopped after its first message.
 */
async function runShellSample(block: CodeBlock, env: TestEnv): Promise<number> {
  const steps = shellSteps(withAddress(block.code, env), block.line);
  const definitions: string[] = [];
  const tokens: Record<string, string> = {};
  const ids = new RequestIds();
  let previous: unknown[] = [];
  let commands = 0;
  for (const step of steps) {
    const where = `${block.file}:${step.line}`;
    if (step.kind === "define") {
      definitions.push(step.text);
      continue;
    }
    if (step.kind === "bind") {
      const token = (previous[0] as { token?: unknown } | undefined)?.token;
      expect(token, `${where}: ${step.name}=tp_... but the command above printed no token`).toEqual(
        expect.stringMatching(/^tp_/),
      );
      tokens[step.name] = token as string;
      continue;
    }
    commands++;
    const command = ids.substitute(step.text);
    const streams = callsServerStream(command);
    const result = await runBash([...definitions, command].join("\n"), {
      cwd: repoRoot,
      env: tokens,
      timeoutMs: STEP_TIMEOUT_MS,
      ...(streams ? { until: (out: string) => jsonObjects(out).length > 0 } : {}),
    });
    const context = `${where}\n${command}\nexit ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    const refusal = shownRefusal(shownObjects(step.shown));
    let printed: unknown[];
    if (streams) {
      expect(result.stopped, `${context}\n(a stream: its first message never came)`).toBe(true);
      printed = jsonObjects(result.stdout);
      // "backlog, then live": what the sample sent before is in the backlog (Subscribe's
      // first response is an envelope; WatchTeam's an event of the team's history).
      expect(printed[0], context).toHaveProperty(
        command.includes("/WatchTeam") ? "event" : "envelope",
      );
    } else if (refusal !== undefined) {
      expect(result.code, context).toBe((refusal * 8) % 256);
      printed = jsonObjects(result.stderr);
    } else {
      expect(result.code, context).toBe(0);
      printed = jsonObjects(result.stdout);
      expect(printed.length, `${context}\n(no JSON response)`).toBeGreaterThan(0);
    }
    // The ids this response returned are the ones the example ids shown below it stand for.
    ids.saw(printed);
    for (const object of shownObjects(ids.substitute(step.shown))) {
      expect(findShown(printed, object), `${context}\n(the sample shows ${object.text})`).toEqual(
        [],
      );
    }
    previous = printed;
  }
  return commands;
}

/** Runs the TypeScript sample with tsx; checks it prints what its comments say. */
async function runTypeScriptSample(code: string, env: TestEnv): Promise<void> {
  const clientDir = join(repoRoot, "client");
  const source = code.replaceAll('"./client/', `"${clientDir}/`);
  expect(source, "the sample imports ./client/").not.toBe(code);
  // What the sample says it prints: a prompt block, then the request's final status.
  const tag = /toPromptText\(envelope\)\);\s*\/\/.*?<([a-z-]+)/.exec(source)?.[1];
  const status = /\/\/ ([a-z_]+)\b[^\n]*$/.exec(source.trimEnd())?.[1];
  expect(tag, "the sample names the prompt block it prints").toBeDefined();
  expect(status, "the sample names the status it prints last").toBeDefined();
  const dir = await mkdtemp(join(os.tmpdir(), "tp-readme-ts-"));
  try {
    // .mts: an ES module wherever it lies, so top-level await works.
    await writeFile(join(dir, "sample.mts"), withAddress(source, env));
    const result = await runBash(`npx tsx ${join(dir, "sample.mts")}`, {
      cwd: repoRoot,
      timeoutMs: 60_000,
    });
    const context = `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
    expect(result.code, context).toBe(0);
    expect(result.stdout, context).toContain(`<${tag}`);
    expect(result.stdout.trimEnd().split("\n").at(-1), context).toBe(status);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("the README and docs/ have the samples this file runs", () => {
  it("finds each of them", () => {
    expect(blocksUnder(readme, "A 30-second tour", "sh")).toHaveLength(1);
    expect(blocksUnder(protocols, "Both flows with `buf curl`", "sh")).toHaveLength(1);
    expect(blocksUnder(agents, "The client library", "ts")).toHaveLength(1);
    expect(blocksUnder(agents, "A Python agent", "python")).toHaveLength(1);
  });
});

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`the README's and docs/' samples against a real server [${kind}]`, () => {
    // One after another on one server, as a reader runs them following the README's links: a
    // sample that reused another's team name would fail here with already_exists.
    it("the README's tour, then the flows of docs/protocols.md, then the TypeScript handshake of docs/agents.md, on one server", async () => {
      const tour = blockUnder(readme, "A 30-second tour", "sh");
      const flows = blockUnder(protocols, "Both flows with `buf curl`", "sh");
      const sample = blockUnder(agents, "The client library", "ts");
      await withServer(kind, async (env) => {
        expect(await runShellSample(tour, env)).toBeGreaterThanOrEqual(6);
        expect(await runShellSample(flows, env)).toBeGreaterThanOrEqual(12);
        await runTypeScriptSample(sample.code, env);
      });
    }, 480_000);
  });
}

// The Python sample needs Debian's grpcio and protoc, as test/interop/python.test.ts does.
const runnable = await pythonPrerequisitesFor("the Python sample of docs/agents.md");

/**
 * The lead's side of the Python sample: waits for the agent's plan, then sends it a text,
 * approves the plan and asks it to shut down; returns once the agent has exited.
 */
async function driveTheLead(lead: TeamClient, agent: Promise<ShellResult>): Promise<ShellResult> {
  let exited: ShellResult | undefined;
  void agent.then((r) => {
    exited = r;
  });
  const deadline = Date.now() + 20_000;
  let plan: Envelope | undefined;
  while (!plan) {
    if (exited)
      throw new Error(`the agent exited before its plan came:\n${JSON.stringify(exited)}`);
    if (Date.now() > deadline) throw new Error("no plan from the agent in 20 s");
    plan = (await inbox(lead)).find((e) => e.message?.kind.case === "planApprovalRequest");
    if (!plan) await sleep(100);
  }
  expect(plan).toMatchObject({ from: "worker", to: "team-lead" });

  await lead.send({ to: "worker", message: text("hello from the lead") });
  await lead.send({ to: "worker", message: planResponse(plan.requestId, true) });
  const asked = await lead.send({ to: "worker", message: shutdownRequest("done") });
  const answered = await lead.awaitRequest({
    requestId: asked.requestId,
    timeout: { seconds: 20n },
  });
  expect(answered.request?.status).toBe(RequestStatus.APPROVED);
  return await withTimeout("the agent to exit", 30_000, agent);
}

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip || !runnable)(`the Python agent of docs/agents.md [${kind}]`, () => {
    it("stubs from the documented protoc command; the agent has its plan approved and approves its shutdown", async () => {
      const agent = blockUnder(agents, "A Python agent", "python");
      const stubsBlock = blockUnder(agents, "Stubs for Python", "sh");
      // The command that runs the agent: the sh block right after the Python one.
      const runBlock = agents[agents.indexOf(agent) + 1];
      if (runBlock?.lang !== "sh") {
        throw new Error(
          "docs/agents.md: the Python agent is not followed by the sh block to run it",
        );
      }
      // The Python part of the stubs block: from its "# Python" comment to the next blank line.
      const stubLines = stubsBlock.code.split("\n");
      const from = stubLines.findIndex((l) => /^#\s*Python\b/.test(l));
      expect(from, "the stubs block has a # Python part").toBeGreaterThanOrEqual(0);
      const to = stubLines.findIndex((l, i) => i > from && l.trim() === "");
      const stubCommand = stubLines.slice(from, to < 0 ? undefined : to).join("\n");

      // A folder of its own, with proto/ in it, as the repo root would have.
      const dir = await mkdtemp(join(os.tmpdir(), "tp-readme-python-"));
      try {
        await symlink(join(repoRoot, "proto"), join(dir, "proto"));
        const stubs = await runBash(stubCommand, { cwd: dir, timeoutMs: STEP_TIMEOUT_MS });
        expect(stubs.code, `${stubCommand}\n${stubs.stderr}`).toBe(0);
        await writeFile(join(dir, "agent.py"), agent.code);

        await withServer(kind, async (env) => {
          const anonymous = env.client();
          const created = await anonymous.createTeam({ team: "demo" });
          const lead = env.client(created.token);
          const added = await lead.addMember({ name: "worker" });
          const command = withAddress(runBlock.code, env).replaceAll("tp_...", added.token);
          expect(command, "the run command has a tp_... for the token").toContain(added.token);
          const stopAgent = new AbortController();
          const agentRun = runBash(command, {
            cwd: dir,
            env: { PYTHONDONTWRITEBYTECODE: "1" },
            timeoutMs: 60_000,
            signal: stopAgent.signal,
          });
          let result: ShellResult;
          try {
            result = await driveTheLead(lead, agentRun);
          } finally {
            stopAgent.abort();
          }
          const context = `exit ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
          expect(result.code, context).toBe(0);
          // Its prints (buffered to the end, since stdout is a pipe): the text, the verdict, the stop.
          const printed = result.stdout.trimEnd().split("\n");
          expect(printed, context).toHaveLength(3);
          expect(printed[0], context).toBe("team-lead: hello from the lead");
          expect(printed[1], context).toMatch(/approved/);
          expect(printed[2], context).toMatch(/shutting down/);

          const members = (await lead.listMembers({})).members;
          expect(members.find((m) => m.name === "worker")?.status).toBe(MemberStatus.STOPPED);
          const plans = await lead.listRequests({ party: "worker" });
          expect(plans.requests.map((r) => r.status)).toEqual([
            RequestStatus.APPROVED,
            RequestStatus.APPROVED,
          ]);
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 120_000);
  });
}
