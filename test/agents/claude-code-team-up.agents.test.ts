import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { memberStatusName, requestStatusName } from "../../client/names.js";
import { CLAUDE_CODE_VERSION, claudeBinary, claudeProject } from "../support/claude-code.js";
import { type CliProcess, runTeam, spawnTeam } from "../support/cli.js";
import { type ModelRequest, startFakeAnthropic } from "../support/fake-anthropic.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import {
  everythingShown,
  flatten,
  hasTeamTools,
  newSinceLastTurn,
  protocolBlocks,
  teamTool,
  waitForTeamTools,
} from "../support/scripted-model.js";
import { waitFor } from "../support/wait.js";

/**
 * `team up` with the default runtime, the real Claude Code: a team file that names no
 * runtime starts one Claude Code process per member, with the member's MCP configuration and
 * the team's hooks, and its team tools allowed. The scripted model of each greets the lead,
 * then waits for messages; `team down` asks each to stop through the shutdown protocol, the
 * model approves, and every step is on the server's records.
 */
describeEachDatabase(`team up with Claude Code ${CLAUDE_CODE_VERSION}`, (env) => {
  it("starts a Claude Code process per member (hooks installed, team tools allowed); team down stops each through the shutdown protocol", async () => {
    const model = (request: ModelRequest) => {
      if (!hasTeamTools(request)) return waitForTeamTools;
      const all = everythingShown(request);
      const me = /I am (alice|bob)\b/.exec(all)?.[1];
      if (!me) return { text: "Done." };
      // What this model itself called (its own tool calls, not what it was told).
      const called = request.messages
        .filter((m) => m.role === "assistant")
        .map((m) => flatten(m.content))
        .join("\n");
      if (called.includes("shutdown_response")) return { text: "Stopped, as the lead asked." };
      const asked = protocolBlocks(newSinceLastTurn(request), "shutdown-request")[0];
      if (asked) {
        return teamTool("send_message", {
          to: "team-lead",
          message: {
            type: "shutdown_response",
            request_id: asked.attrs.request_id,
            approve: true,
          },
        });
      }
      if (!called.includes(`${me} is up`)) {
        return teamTool("send_message", { to: "team-lead", message: `${me} is up` });
      }
      return teamTool("wait_for_messages", { timeout_seconds: 10 });
    };
    const fake = await startFakeAnthropic(model);
    let up: CliProcess | undefined;
    try {
      const project = await claudeProject(fake.url);
      const team = uniqueName("cc-up");
      const file = join(project.dir, "team.yaml");
      await mkdir(join(project.dir, "bob"));
      // No runtime named: Claude Code is the default.
      await writeFile(
        file,
        [
          `team: ${team}`,
          "members:",
          "  - name: alice",
          "    prompt: I am alice. Greet the lead, then wait for messages and answer them.",
          "  - name: bob",
          "    cwd: bob",
          "    prompt: I am bob. Greet the lead, then wait for messages and answer them.",
          "",
        ].join("\n"),
      );
      const upEnv = { ...project.env, TEAM_URL: env().server.url, TEAM_CLAUDE: claudeBinary() };
      up = spawnTeam(["up", file], upEnv);
      const state = join(project.dir, ".team", team);
      let leadToken = "";
      await waitFor(
        "the lead's token",
        async () => {
          leadToken = (await readFile(join(state, "lead.token"), "utf8").catch(() => "")).trim();
          return leadToken !== "";
        },
        { timeoutMs: 60_000 },
      );
      const lead = createTeamClient({ baseUrl: env().server.url, token: leadToken });
      const texts = async () =>
        (await lead.readInbox({ afterSeq: 0, limit: 100 })).envelopes.map((e) =>
          e.message?.kind.case === "text" ? e.message.kind.value : "",
        );
      await waitFor(
        "both greetings",
        async () => {
          const t = await texts();
          return t.includes("alice is up") && t.includes("bob is up");
        },
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      // Each member's folder has the team's hooks, where Claude Code reads a project's own.
      for (const dir of [project.dir, join(project.dir, "bob")]) {
        const settings = JSON.parse(
          await readFile(join(dir, ".claude", "settings.local.json"), "utf8"),
        ) as { hooks?: Record<string, unknown> };
        expect(Object.keys(settings.hooks ?? {}), dir).toEqual(
          expect.arrayContaining(["SessionStart", "PostToolUse", "Stop"]),
        );
      }

      const down = await runTeam(["down", file], upEnv);
      expect(down.code, `${down.stdout}\n${down.stderr}`).toBe(0);
      expect(down.stdout).toContain("alice: approved");
      expect(down.stdout).toContain("bob: approved");
      expect((await up.done).code).toBe(0);

      // The server's records: each stopped by an approved shutdown request it answered.
      const members = await lead.members();
      for (const name of ["alice", "bob"]) {
        expect(memberStatusName(members.find((m) => m.name === name)?.status ?? 0), name).toBe(
          "stopped",
        );
      }
      const { requests } = await lead.listRequests({ kind: "shutdown" });
      expect(requests.map((r) => [r.to, requestStatusName(r.status)]).sort()).toEqual([
        ["alice", "approved"],
        ["bob", "approved"],
      ]);
      // What Claude Code showed each model: the request, with the answer it then sent.
      for (const r of requests) {
        expect(
          fake.requests.some((q) => newSinceLastTurn(q).includes(`request_id="${r.requestId}"`)),
          r.to,
        ).toBe(true);
      }
    } finally {
      up?.child.kill("SIGKILL");
      await fake.close();
    }
  });
});
