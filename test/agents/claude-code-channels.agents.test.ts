import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { CLAUDE_CODE_VERSION, claudeProject } from "../support/claude-code.js";
import { startFakeAnthropic } from "../support/fake-anthropic.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import {
  everythingShown,
  hasTeamTools,
  teamTool,
  waitForTeamTools,
} from "../support/scripted-model.js";

/**
 * What the real Claude Code does with `team mcp`'s channel events when it runs as tests and
 * CI can run it: headless (`claude -p`), API-key auth. The channel contract itself is proven
 * with the MCP SDK's Client (test/service/mcp-channel-push.test.ts); this test pins down
 * the runtime's side, so a Claude Code that starts taking the events shows up here.
 */
describeEachDatabase(`Claude Code ${CLAUDE_CODE_VERSION}: channel events`, (env) => {
  it("headless under API-key auth it registers no channel listener and the model is not shown the event; the message stays for the other paths", async () => {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"));
    const lead = anon.withToken(created.token);
    const token = (await lead.addMember("worker")).token;
    const worker = lead.withToken(token);
    await lead.sendText("worker", "pushed-by-channel: read the spec");

    let calls = 0;
    const fake = await startFakeAnthropic((request) => {
      if (!hasTeamTools(request)) return waitForTeamTools;
      // A tool call gives the bridge time to push (it pushes as soon as it is connected).
      return calls++ === 0 ? teamTool("list_members", {}) : { text: "Done." };
    });
    try {
      const project = await claudeProject(fake.url);
      const url = env().server.url;
      await project.claude([
        ...["mcp", "add", "team", "-e", `TEAM_URL=${url}`, "-e", `TEAM_TOKEN=${token}`],
        ...["--", "team", "mcp"],
      ]);
      const debugFile = join(project.dir, "..", "debug.log");
      const run = await project.ask("start", [
        ...["--allowedTools", "mcp__team"],
        ...["--dangerously-load-development-channels", "server:team"],
        ...["--debug-file", debugFile],
      ]);
      expect(run.code, run.stderr).toBe(0);
      const debug = await readFile(debugFile, "utf8");
      // The server was there, pushing, declared as a channel; Claude Code never listened.
      expect(debug).toContain('MCP server "team": Successfully connected');
      expect(debug).not.toContain("Channel notifications registered");
      const shown = fake.requests.map(everythingShown).join("\n");
      expect(shown).not.toContain("pushed-by-channel");
      expect(shown).not.toMatch(/<channel [^>]*from="team-lead"/);
      // The default push does not ack: the message waits for wait_for_messages or a hook.
      const { envelopes } = await worker.readInbox();
      expect(envelopes.map((e) => e.seq)).toEqual([1n]);
    } finally {
      await fake.close();
    }
  });
});
