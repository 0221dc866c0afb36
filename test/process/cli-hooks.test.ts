import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { runTeam } from "../support/cli.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";

/** `team hook` and `team hooks` as Claude Code and a person run them: child processes. */
describeEachDatabase("team hook / team hooks (CLI)", (env) => {
  it("team hook stop prints Claude Code's block and exits 0", async () => {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const lead = anon.withToken((await anon.createTeam(uniqueName("team"))).token);
    const token = (await lead.addMember("worker")).token;
    const asked = await lead.requestShutdown("worker");
    const r = await runTeam(
      ["hook", "stop"],
      { TEAM_URL: env().server.url, TEAM_TOKEN: token },
      JSON.stringify({ session_id: uniqueName("s"), stop_hook_active: false }),
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { decision: string; reason: string };
    expect(out.decision).toBe("block");
    expect(out.reason).toContain(asked.requestId);
  });

  it("never exits 2 (Claude Code's 'block'): a usage mistake or a missing token fails open with exit 1", async () => {
    const unknown = await runTeam(["hook", "pre-compact"], {}, "{}");
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe("");
    const badFlag = await runTeam(["hook", "stop", "--no-such-flag"], {}, "{}");
    expect(badFlag.code).toBe(1);
    const noToken = await runTeam(["hook", "stop"], { TEAM_URL: env().server.url }, "{}");
    expect(noToken.code).toBe(1);
    expect(noToken.stderr.trim().split("\n")).toEqual([
      "team hook stop: not applied, TEAM_TOKEN is not set",
    ]);
    const down = await runTeam(
      ["hook", "post-tool-use", "--timeout-ms", "2000"],
      { TEAM_URL: "http://127.0.0.1:9", TEAM_TOKEN: "tp_x" },
      "{}",
    );
    expect(down.code).toBe(1);
    expect(down.stdout).toBe("");
    expect(down.stderr.trim().split("\n")).toHaveLength(1);
    // Four CLI processes, each bounded by runTeam's own 30 s: under CI's load one start of
    // the CLI took seven seconds and more, and four outran a single test's 30 s.
  }, 90_000);

  it("team hooks install merges into .claude/settings.json, keeping what is there; print shows the same hooks", async () => {
    const dir = await mkdtemp(join(tmpdir(), "hooks-install-"));
    await mkdir(join(dir, ".claude"));
    await writeFile(join(dir, ".claude", "settings.json"), JSON.stringify({ model: "opus" }));
    const installed = await runTeam(["hooks", "install", "--dir", dir]);
    expect(installed.code, installed.stderr).toBe(0);
    const settings = JSON.parse(await readFile(join(dir, ".claude", "settings.json"), "utf8"));
    expect(settings.model).toBe("opus");
    const printed = await runTeam(["hooks", "print"]);
    expect(JSON.parse(printed.stdout).hooks).toEqual(settings.hooks);
    // Node and the CLI's entry point, both absolute: the hook works from any directory.
    expect(settings.hooks.Stop[0].hooks[0].command).toMatch(
      /^"\/\S+\/node" "\/\S+\/(bin\/team|client\/cli\/bin)\.js" hook stop$/,
    );
    await writeFile(join(dir, ".claude", "settings.json"), "{ not json");
    const refused = await runTeam(["hooks", "install", "--dir", dir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("is not JSON");
  });
});
