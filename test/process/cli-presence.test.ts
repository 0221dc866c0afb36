import { mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { Presence, SeenVia } from "../../gen/team/v1/enums_pb.js";
import { runTeam } from "../support/cli.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";
import { eventually } from "../support/wait.js";

/**
 * Presence as the CLI's programs make it: `team hook ...` names itself with the header
 * `team-client: hook`, `team mcp` with `team-client: mcp`, and a plain command says nothing
 * (rpc); `team members` shows each member's presence and how it was last seen.
 */
describeEachDatabase("presence through the CLI", (env) => {
  it("a hook call is seen via hook, a team mcp call via mcp, a plain command via rpc; team members shows them", async () => {
    const url = env().server.url;
    const anon = createTeamClient({ baseUrl: url });
    const lead = anon.withToken((await anon.createTeam(uniqueName("team"))).token);
    const tokens: Record<string, string> = {};
    for (const name of ["hooked", "bridged", "plain"]) {
      tokens[name] = (await lead.addMember(name)).token;
    }
    const as = (name: string) => ({ TEAM_URL: url, TEAM_TOKEN: tokens[name] ?? "" });

    const dir = await mkdtemp(join(tmpdir(), "presence-hook-"));
    await mkdir(join(dir, ".git"));
    const hook = await runTeam(
      ["hook", "pre-tool-use"],
      as("hooked"),
      JSON.stringify({
        session_id: uniqueName("s"),
        hook_event_name: "PreToolUse",
        cwd: dir,
        tool_name: "Edit",
        tool_input: { file_path: join(dir, "a.ts"), old_string: "a", new_string: "b" },
        tool_use_id: "toolu_1",
      }),
    );
    expect(hook.code, hook.stderr).toBe(0);

    const mcp = await connectMcp("stdio", url, tokens.bridged ?? "", { args: ["--no-push"] });
    await callTool(mcp, "whoami");

    const plain = await runTeam(["members"], as("plain"));
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.split("\n")[0]).toMatch(
      /^NAME\s+ROLE\s+STATUS\s+MODE\s+PRESENCE\s+LAST SEEN\s+VIA$/,
    );

    await eventually(async () => {
      const members = await lead.members();
      const by = Object.fromEntries(members.map((m) => [m.name, m]));
      expect(by.hooked).toMatchObject({ presence: Presence.ONLINE, lastSeenVia: SeenVia.HOOK });
      expect(by.bridged).toMatchObject({ presence: Presence.ONLINE, lastSeenVia: SeenVia.MCP });
      expect(by.plain).toMatchObject({ presence: Presence.ONLINE, lastSeenVia: SeenVia.RPC });
    });
    const table = await runTeam(["members"], as("plain"));
    expect(table.stdout).toMatch(/\nhooked\s+teammate\s+active\s+default\s+online\s+\S+\s+hook\n/);
    expect(table.stdout).toMatch(/\nbridged\s+teammate\s+active\s+default\s+online\s+\S+\s+mcp\n/);
    expect(table.stdout).toMatch(
      /\nplain \(you\)\s+teammate\s+active\s+default\s+online\s+\S+\s+rpc\n/,
    );
  }, 180_000);
});
