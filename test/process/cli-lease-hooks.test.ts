import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { runTeam } from "../support/cli.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";

const exec = promisify(execFile);

/**
 * The lease hooks as Claude Code and git run them, child processes with real stdin:
 * `team hook pre-tool-use` denies an edit under another member's exclusive lease (Claude
 * Code's PreToolUse answer, naming the holder, its pattern, its expiry and how to ask) and
 * says nothing otherwise; `team hooks install-git` writes a pre-commit hook that refuses a
 * real `git commit` touching such a lease. Both fail open with one line when the server is
 * unreachable, and closed when TEAM_LEASE_FAIL_CLOSED (or --fail-closed) says so.
 */

const DOWN = { TEAM_URL: "http://127.0.0.1:9", TEAM_TOKEN: "tp_x" };

const preToolUse = (tool: string, input: Record<string, unknown>, cwd: string) =>
  JSON.stringify({
    session_id: uniqueName("s"),
    hook_event_name: "PreToolUse",
    cwd,
    tool_name: tool,
    tool_input: input,
    tool_use_id: "toolu_1",
  });

interface Denial {
  hookSpecificOutput: {
    hookEventName: string;
    permissionDecision: string;
    permissionDecisionReason: string;
  };
}

/** A temporary git repository with a user, so commits work anywhere. */
async function gitRepo(): Promise<{ dir: string; git(...args: string[]): Promise<string> }> {
  const dir = await mkdtemp(join(tmpdir(), "lease-git-"));
  const git = async (...args: string[]) =>
    (await exec("git", args, { cwd: dir, env: gitEnv({}) })).stdout;
  await git("init", "-q", "-b", "main");
  await git("config", "user.email", "t@example.com");
  await git("config", "user.name", "t");
  await writeFile(join(dir, "README.md"), "hello\n");
  await git("add", "README.md");
  await git("commit", "-q", "-m", "first");
  return { dir, git };
}

/** The test's environment without its TEAM_* variables, plus `extra`. */
function gitEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("TEAM_")) delete env[k];
  return { ...env, ...extra };
}

/** `git commit` with a hook's environment: its exit code and stderr. */
async function commit(dir: string, env: Record<string, string>, message: string) {
  try {
    const done = await exec("git", ["commit", "-q", "-m", message], {
      cwd: dir,
      env: gitEnv(env),
    });
    return { code: 0, stderr: done.stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

describeEachDatabase("lease hooks (CLI)", (env) => {
  async function team() {
    const url = env().server.url;
    const anon = createTeamClient({ baseUrl: url });
    const lead = anon.withToken((await anon.createTeam(uniqueName("team"))).token);
    const tokens: Record<string, string> = {};
    for (const name of ["alice", "bob", "carol"]) tokens[name] = (await lead.addMember(name)).token;
    const client = (name: string) => lead.withToken(tokens[name] ?? "");
    const as = (name: string) => ({ TEAM_URL: url, TEAM_TOKEN: tokens[name] ?? "" });
    return { lead, client, as };
  }

  it("pre-tool-use denies an Edit, Write, MultiEdit or NotebookEdit under another member's exclusive lease; allows the rest", async () => {
    const t = await team();
    const lease = await t.client("alice").acquireLease("src/parser/**", {
      ttlSeconds: 600,
      reason: "rewriting the lexer",
    });
    await t.client("carol").acquireLease("docs/**", { mode: "shared", ttlSeconds: 600 });
    const dir = await mkdtemp(join(tmpdir(), "lease-hook-"));
    await mkdir(join(dir, ".git"));
    const hook = (name: string, tool: string, input: Record<string, unknown>, cwd = dir) =>
      runTeam(["hook", "pre-tool-use"], t.as(name), preToolUse(tool, input, cwd));

    const denied = await hook("bob", "Edit", {
      file_path: join(dir, "src/parser/lexer.ts"),
      old_string: "a",
      new_string: "b",
    });
    expect(denied.code, denied.stderr).toBe(0);
    const out = JSON.parse(denied.stdout) as Denial;
    expect(out.hookSpecificOutput.hookEventName).toBe("PreToolUse");
    expect(out.hookSpecificOutput.permissionDecision).toBe("deny");
    const reason = out.hookSpecificOutput.permissionDecisionReason;
    expect(reason).toMatch(
      /^lease-held: src\/parser\/lexer\.ts is under alice's exclusive lease on "src\/parser\/\*\*"/,
    );
    expect(reason).toContain(lease.leaseId);
    expect(reason).toMatch(/until 20\d\d-\d\d-\d\dT[0-9:.]+Z: rewriting the lexer/);
    expect(reason).toContain("send_message to alice");

    // From a folder below the root, the path is still the repository's.
    const below = await hook(
      "bob",
      "Write",
      { file_path: join(dir, "src/parser/new.ts"), content: "x" },
      join(dir, "src"),
    );
    expect(JSON.parse(below.stdout).hookSpecificOutput.permissionDecision).toBe("deny");
    // A relative path is the session cwd's.
    const relative = await hook("bob", "Write", { file_path: "parser/rel.ts" }, join(dir, "src"));
    expect(JSON.parse(relative.stdout).hookSpecificOutput.permissionDecisionReason).toMatch(
      /^lease-held: src\/parser\/rel\.ts is under alice's/,
    );
    const notebook = await hook("bob", "NotebookEdit", {
      notebook_path: join(dir, "src/parser/n.ipynb"),
      new_source: "x",
    });
    expect(JSON.parse(notebook.stdout).hookSpecificOutput.permissionDecision).toBe("deny");
    // A name no lease could hold is still checked (the server refused it, and the hook
    // failed open).
    const colon = await hook("bob", "Edit", { file_path: join(dir, "src/parser/a:b.ts") });
    expect(colon.stdout, colon.stderr).toMatch(/^\{/);
    expect(JSON.parse(colon.stdout).hookSpecificOutput.permissionDecisionReason).toMatch(
      /^lease-held: src\/parser\/a:b\.ts is under alice's/,
    );
    const multi = await hook("bob", "MultiEdit", {
      file_path: join(dir, "src/parser/a.ts"),
      edits: [],
    });
    expect(JSON.parse(multi.stdout).hookSpecificOutput.permissionDecision).toBe("deny");

    // Allowed, with nothing printed: the holder's own edit, an unleased file, a file under
    // a shared lease, a file outside the repository, a tool that edits nothing.
    for (const [name, tool, input] of [
      ["alice", "Edit", { file_path: join(dir, "src/parser/lexer.ts") }],
      ["bob", "Edit", { file_path: join(dir, "README.md") }],
      ["bob", "Write", { file_path: join(dir, "docs/guide.md") }],
      ["bob", "Write", { file_path: join(tmpdir(), "src/parser/x.ts") }],
      ["bob", "Read", { file_path: join(dir, "src/parser/lexer.ts") }],
    ] as const) {
      const r = await hook(name, tool, input);
      expect([r.code, r.stdout], `${name} ${tool} ${JSON.stringify(input)}: ${r.stderr}`).toEqual([
        0,
        "",
      ]);
    }
  }, 180_000);

  it("install-git's pre-commit hook refuses a real commit touching another member's exclusive lease; the rest commit", async () => {
    const t = await team();
    const lease = await t.client("alice").acquireLease("src/parser/**", { ttlSeconds: 600 });
    await t.client("carol").acquireLease("docs/**", { mode: "shared", ttlSeconds: 600 });
    const repo = await gitRepo();
    const installed = await runTeam(["hooks", "install-git", "--dir", repo.dir]);
    expect(installed.code, installed.stderr).toBe(0);
    const hookFile = join(repo.dir, ".git", "hooks", "pre-commit");
    expect(installed.stdout).toBe(`git pre-commit hook installed in ${hookFile}\n`);
    expect(await readFile(hookFile, "utf8")).toMatch(/^#!\/bin\/sh\n.*\nexec "\/\S+\/node" /s);
    // Installing again replaces our own hook.
    expect((await runTeam(["hooks", "install-git", "--dir", repo.dir])).code).toBe(0);

    await mkdir(join(repo.dir, "src/parser"), { recursive: true });
    await writeFile(join(repo.dir, "src/parser/lexer.ts"), "x\n");
    await writeFile(join(repo.dir, "notes.md"), "n\n");
    await repo.git("add", "-A");
    const head = (await repo.git("rev-parse", "HEAD")).trim();
    const refused = await commit(repo.dir, t.as("bob"), "bob edits the lexer");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      `team: commit refused: src/parser/lexer.ts is under alice's exclusive lease on "src/parser/**" (${lease.leaseId}, until `,
    );
    expect(refused.stderr).not.toContain("notes.md");
    expect((await repo.git("rev-parse", "HEAD")).trim()).toBe(head);

    // The holder commits it; bob commits what is not leased (or only shared-leased).
    expect((await commit(repo.dir, t.as("alice"), "alice's lexer")).code).toBe(0);
    await writeFile(join(repo.dir, "docs.md"), "d\n");
    await mkdir(join(repo.dir, "docs"));
    await writeFile(join(repo.dir, "docs/a.md"), "a\n");
    await repo.git("add", "-A");
    const bobs = await commit(repo.dir, t.as("bob"), "bob's docs");
    expect(bobs, bobs.stderr).toEqual({ code: 0, stderr: "" });
    // Deleting a leased file touches it too.
    await repo.git("rm", "-q", "src/parser/lexer.ts");
    expect((await commit(repo.dir, t.as("bob"), "bob deletes the lexer")).code).not.toBe(0);
    // Files whose names no lease could hold (a colon, a backslash) staged beside it: the
    // check is not refused (it failed open, the leased file with it), and names each one.
    await mkdir(join(repo.dir, "src/parser"), { recursive: true });
    await writeFile(join(repo.dir, "notes:1.md"), "n\n");
    await writeFile(join(repo.dir, "src/parser/a:b.ts"), "x\n");
    await writeFile(join(repo.dir, "src/parser/c\\d.ts"), "x\n");
    await repo.git("add", "-A");
    const odd = await commit(repo.dir, t.as("bob"), "bob's odd names");
    expect(odd.code, odd.stderr).not.toBe(0);
    expect(odd.stderr).not.toMatch(/failed open|could not/);
    for (const path of ["src/parser/lexer.ts", "src/parser/a:b.ts", "src/parser/c\\d.ts"]) {
      expect(odd.stderr).toContain(`team: commit refused: ${path} is under alice's`);
    }
    expect(odd.stderr).not.toContain("notes:1.md is under");
  }, 180_000);
});

describe("lease hooks with the server unreachable", () => {
  it("pre-tool-use fails open with one line; closed (a deny naming why) with TEAM_LEASE_FAIL_CLOSED or --fail-closed", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lease-hook-"));
    await mkdir(join(dir, ".git"));
    const input = preToolUse("Edit", { file_path: join(dir, "src/a.ts") }, dir);
    const args = ["hook", "pre-tool-use", "--timeout-ms", "3000"];
    const open = await runTeam(args, DOWN, input);
    expect(open.code).toBe(1);
    expect(open.stdout).toBe("");
    expect(open.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^team hook pre-tool-use: not applied: /),
    ]);
    for (const [extraArgs, extraEnv] of [
      [[], { TEAM_LEASE_FAIL_CLOSED: "1" }],
      [["--fail-closed"], {}],
    ] as const) {
      const closed = await runTeam([...args, ...extraArgs], { ...DOWN, ...extraEnv }, input);
      expect(closed.code, closed.stderr).toBe(0);
      const out = JSON.parse(closed.stdout) as Denial;
      expect(out.hookSpecificOutput.permissionDecision).toBe("deny");
      expect(out.hookSpecificOutput.permissionDecisionReason).toMatch(
        /^lease-unknown: the team's server could not be asked whether src\/a\.ts is leased/,
      );
      expect(closed.stderr.trim().split("\n")).toHaveLength(1);
    }
    // Without a token: the same (a deny when failing closed, else one line and exit 1).
    const noToken = await runTeam(
      ["hook", "pre-tool-use"],
      { TEAM_URL: DOWN.TEAM_URL, TEAM_LEASE_FAIL_CLOSED: "yes" },
      input,
    );
    expect(noToken.code, noToken.stderr).toBe(0);
    expect(JSON.parse(noToken.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
      "(TEAM_TOKEN is not set)",
    );
    const noTokenOpen = await runTeam(["hook", "pre-tool-use"], { TEAM_URL: DOWN.TEAM_URL }, input);
    expect([noTokenOpen.code, noTokenOpen.stdout]).toEqual([1, ""]);
    // Failing closed refuses edits only: a Read it was not set up for is never denied.
    const read = await runTeam(
      args,
      { ...DOWN, TEAM_LEASE_FAIL_CLOSED: "1" },
      preToolUse("Read", { file_path: join(dir, "src/a.ts") }, dir),
    );
    expect(read.stdout).toBe("");
  }, 120_000);

  it("the git hook lets a commit through with one line; refuses it when failing closed; install-git leaves a foreign hook alone", async () => {
    const repo = await gitRepo();
    expect((await runTeam(["hooks", "install-git", "--dir", repo.dir])).code).toBe(0);
    await writeFile(join(repo.dir, "a.txt"), "a\n");
    await repo.git("add", "a.txt");
    const downEnv = { ...DOWN, TEAM_HOOK_TIMEOUT_MS: "3000" };
    const closed = await commit(repo.dir, { ...downEnv, TEAM_LEASE_FAIL_CLOSED: "1" }, "closed");
    expect(closed.code).not.toBe(0);
    expect(closed.stderr).toMatch(/^team: commit refused: the leases could not be checked \(/);
    const open = await commit(repo.dir, downEnv, "open");
    expect(open.code).toBe(0);
    expect(open.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^team hooks pre-commit: leases not checked: /),
    ]);

    const other = await gitRepo();
    const foreign = join(other.dir, ".git", "hooks", "pre-commit");
    await writeFile(foreign, "#!/bin/sh\nexit 0\n");
    const refused = await runTeam(["hooks", "install-git", "--dir", other.dir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("exists and is not ours");
    expect(await readFile(foreign, "utf8")).toBe("#!/bin/sh\nexit 0\n");
  }, 120_000);
});

// The hooks block `team hooks install` writes includes the lease check on edit tools.
describe("team hooks print", () => {
  it("has PreToolUse on Edit|Write|MultiEdit|NotebookEdit running team hook pre-tool-use", async () => {
    const printed = await runTeam(["hooks", "print", "--command", "team"]);
    expect(JSON.parse(printed.stdout).hooks.PreToolUse).toEqual([
      {
        matcher: "Edit|Write|MultiEdit|NotebookEdit",
        hooks: [{ type: "command", command: "team hook pre-tool-use", timeout: 30 }],
      },
    ]);
  });
});
