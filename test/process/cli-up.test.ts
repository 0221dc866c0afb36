import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { memberStatusName, requestStatusName } from "../../client/names.js";
import { repoRoot } from "../support/child-server.js";
import { runTeam, type ServeProcess, spawnTeam, startTeamServe } from "../support/cli.js";
import { uniqueName } from "../support/harness.js";

/**
 * `team up FILE` / `team status` / `team down`: command-template members (test/support/
 * up-agent.ts, an agent through the client library) started, restarted and stopped by the
 * CLI, each step checked against the server's records.
 */

let dir: string;
let serve: ServeProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), "tp-up-"));
  // A deadline, not a figure: the embedded database starts slowly on a loaded machine.
  serve = await startTeamServe(["--port", "0", "--data-dir", join(dir, "data")], 120_000);
}, 150_000);

afterAll(async () => {
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

const agent = [
  process.execPath,
  "--import",
  join(repoRoot, "node_modules/tsx/dist/loader.mjs"),
  join(repoRoot, "test/support/up-agent.ts"),
  "{name}",
  "{mcp_config}",
  "{prompt}",
];

/** Polls an async check until it returns a value. */
async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Every text the lead has received, oldest first. */
async function leadTexts(lead: TeamClient): Promise<string[]> {
  const { envelopes } = await lead.readInbox({ afterSeq: 0, limit: 500 });
  return envelopes.flatMap((e) => (e.message?.kind.case === "text" ? [e.message.kind.value] : []));
}

describe("team up", () => {
  it("refuses a bad team file with the line and the field", async () => {
    const file = join(dir, "bad.yaml");
    await writeFile(
      file,
      "team: bad\nmembers:\n  - name: alice\n    permission_mode: yolo\n    runtime: {command: [x]}\n",
    );
    const result = await runTeam(["up", file], { TEAM_URL: serve.url });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${file}:4: members[0].permission_mode: must be one of`);
    await writeFile(file, "team: bad\nmembers:\n  - name: alice\n    runtim: claude-code\n");
    const unknown = await runTeam(["up", file], { TEAM_URL: serve.url });
    expect(unknown.stderr).toContain(`${file}:4: members[0]: unknown field runtim`);
    await writeFile(file, '{"team": "bad", "members": [{"name": "a", "runtime": "docker"}]}');
    const json = await runTeam(["up", file], { TEAM_URL: serve.url });
    expect(json.stderr).toContain(`${file}:1: members[0].runtime: must be "claude-code" or`);
  });

  it("starts the members, restarts a crash with a note in its inbox, shows their status, and stops them through the shutdown protocol", async () => {
    const team = uniqueName("up");
    const teamDir = await mkdtemp(join(dir, "team-"));
    const file = join(teamDir, "team.yaml");
    await writeFile(
      file,
      [
        `team: ${team}`,
        "members:",
        "  - name: alice",
        "    prompt: write the tests",
        `    runtime: { command: ${JSON.stringify(agent)} }`,
        "  - name: bob",
        "    prompt: review them",
        "    cwd: bob",
        `    runtime: { command: ${JSON.stringify(agent)} }`,
        `    env: { CRASH_ONCE: ${JSON.stringify(join(teamDir, "bob-crashed"))} }`,
        "",
      ].join("\n"),
    );
    const up = spawnTeam(["up", file], { TEAM_URL: serve.url });
    const state = join(teamDir, ".team", team);
    const lead = createTeamClient({
      baseUrl: serve.url,
      token: await until("the lead token", () =>
        readFile(join(state, "lead.token"), "utf8").then(
          (t) => t.trim() || undefined,
          () => undefined,
        ),
      ),
    });
    // Each agent greets the lead with its {prompt}; bob only after its restart.
    const texts = await until("both greetings", async () => {
      const t = await leadTexts(lead);
      return t.some((x) => x.startsWith("bob is up")) && t.some((x) => x.startsWith("alice"))
        ? t
        : undefined;
    });
    expect(texts).toEqual(
      expect.arrayContaining(["alice is up: write the tests", "bob is up: review them"]),
    );
    expect(up.stdout()).toContain(`team "${team}": created`);
    expect(up.stdout()).toMatch(/bob: process exited \(exit code 1\); restart 1 in \d+ s/);
    // The crash is in bob's inbox, so in the feed, from the lead.
    const bobInbox = await lead.withToken(
      (await readFile(join(state, "members/bob/token"), "utf8")).trim(),
    );
    const bobTexts = (await bobInbox.readInbox({ afterSeq: 0 })).envelopes.map((e) =>
      e.message?.kind.case === "text" ? e.message.kind.value : "",
    );
    expect(bobTexts.some((t) => t.startsWith("team up: your process exited (exit code 1)"))).toBe(
      true,
    );
    // Tokens in files only this user may read; none printed.
    for (const f of [
      "lead.token",
      "members/alice/token",
      "members/bob/token",
      "members/alice/mcp.json",
    ])
      expect((await stat(join(state, f))).mode & 0o777).toBe(0o600);
    expect(up.stdout()).not.toMatch(/tp_/);

    // A link into the web console, as the lead or as a member: the token in its fragment.
    const link = await runTeam(["console", file], { TEAM_URL: serve.url });
    expect(link.code, link.stderr).toBe(0);
    const leadToken = (await readFile(join(state, "lead.token"), "utf8")).trim();
    expect(link.stdout).toBe(`${serve.url}/#token=${encodeURIComponent(leadToken)}\n`);
    const aliceLink = await runTeam(["console", file, "--member", "alice"], {
      TEAM_URL: serve.url,
    });
    const aliceToken = (await readFile(join(state, "members/alice/token"), "utf8")).trim();
    expect(aliceLink.stdout).toBe(`${serve.url}/#token=${encodeURIComponent(aliceToken)}\n`);
    expect(up.stdout()).toContain("team console for a link into the web console");

    const status = await runTeam(["status", file, "--json"], { TEAM_URL: serve.url });
    expect(status.code, status.stderr).toBe(0);
    const rows = (JSON.parse(status.stdout) as { members: Record<string, unknown>[] }).members;
    // Presence as the server computes it: each running agent called it moments ago.
    const seen = { presence: "online", lastSeenVia: expect.stringMatching(/^(stream|rpc)$/) };
    expect(rows).toEqual([
      expect.objectContaining({
        name: "alice",
        process: "running",
        restarts: 0,
        member: "active",
        ...seen,
      }),
      expect.objectContaining({
        name: "bob",
        process: "running",
        restarts: 1,
        member: "active",
        ...seen,
      }),
    ]);
    const text = await runTeam(["status", file], { TEAM_URL: serve.url });
    expect(text.stdout).toMatch(
      /^NAME\s+PROCESS\s+PID\s+RESTARTS\s+MEMBER\s+PRESENCE\s+LAST SEEN\s/,
    );
    expect(text.stdout).toMatch(
      /\nalice\s+running\s+\d+\s+0\s+active\s+online\s+20\S+ \((stream|rpc)\)/,
    );

    const down = await runTeam(["down", file], { TEAM_URL: serve.url });
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toContain("alice: approved");
    expect(down.stdout).toContain("bob: approved");
    expect(down.stdout).toContain("processes stopped");
    expect((await up.done).code).toBe(0);
    // The server's records: both stopped, each by an approved shutdown request.
    const members = await lead.members();
    for (const name of ["alice", "bob"])
      expect(memberStatusName(members.find((m) => m.name === name)?.status ?? 0)).toBe("stopped");
    const requests = (await lead.listRequests({ kind: "shutdown" })).requests;
    expect(requests.map((r) => [r.to, requestStatusName(r.status)]).sort()).toEqual([
      ["alice", "approved"],
      ["bob", "approved"],
    ]);
    expect(await readFile(join(state, "members/alice/log"), "utf8")).toContain(
      "alice: approved the shutdown",
    );
    const saved = JSON.parse(await readFile(join(state, "up.json"), "utf8"));
    // Exited on its own after approving, or stopped by team down's SIGTERM a moment before.
    for (const m of saved.members as { state: string; pid?: number }[]) {
      expect(["exited", "stopped"]).toContain(m.state);
      expect(m.pid).toBeUndefined();
    }

    // Up again: the team is reused, its members come back with new tokens; Ctrl-C stops them.
    const again = spawnTeam(["up", file], { TEAM_URL: serve.url });
    await until("the members back", async () =>
      (await lead.members()).filter((m) => memberStatusName(m.status) === "active").length === 3
        ? true
        : undefined,
    );
    // Its report may reach the pipe after the members are back: wait for the lines too.
    await until("team up to say the team was reused", async () =>
      again.stdout().includes(`member "alice": added again`) ? true : undefined,
    );
    expect(again.stdout()).toContain(`team "${team}": reused`);
    expect(again.stdout()).toContain(`member "alice": added again`);
    await until("team up to report up", async () =>
      again.stdout().includes("is up on") ? true : undefined,
    );
    again.child.kill("SIGINT");
    const ended = await again.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toContain("alice: approved");
    const after = await lead.listRequests({ kind: "shutdown", status: "approved" });
    expect(after.requests.length).toBe(4);
  }, 180_000);
});
