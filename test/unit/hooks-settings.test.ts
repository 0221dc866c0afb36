import { describe, expect, it } from "vitest";
import { hookEventNames } from "../../client/cli/hooks/hook-events.js";
import { parseHookInput } from "../../client/cli/hooks/hook-input.js";
import { mergeTeamHooks, teamHooks } from "../../client/cli/hooks/hooks-settings.js";

const team = `"/usr/bin/node" "/opt/team-protocols/bin/team.js"`;

describe("team hooks: settings.json", () => {
  it("one command per event, in Claude Code's shape; PostToolUse on every tool, PreToolUse on the edit tools", () => {
    const hooks = teamHooks(team);
    expect(Object.keys(hooks).sort()).toEqual(
      [
        "PostToolUse",
        "PreToolUse",
        "SessionStart",
        "Stop",
        "SubagentStop",
        "UserPromptSubmit",
      ].sort(),
    );
    expect(hooks.Stop).toEqual([
      { hooks: [{ type: "command", command: `${team} hook stop`, timeout: 30 }] },
    ]);
    expect(hooks.PostToolUse?.[0]?.matcher).toBe("*");
    expect(hooks.PreToolUse).toEqual([
      {
        matcher: "Edit|Write|MultiEdit|NotebookEdit",
        hooks: [{ type: "command", command: `${team} hook pre-tool-use`, timeout: 30 }],
      },
    ]);
    expect(hookEventNames).toEqual([
      "stop",
      "subagent-stop",
      "session-start",
      "user-prompt-submit",
      "post-tool-use",
      "pre-tool-use",
    ]);
  });

  it("merging keeps every other setting and hook, and replaces only its own (installing twice changes nothing)", () => {
    const mine = { type: "command", command: "npx prettier --write" };
    const existing = {
      model: "opus",
      permissions: { allow: ["Bash(npm test)"] },
      hooks: {
        PostToolUse: [{ matcher: "Edit|Write", hooks: [mine] }],
        Stop: [{ hooks: [{ type: "command", command: "old/bin/team hook stop" }, mine] }],
        Notification: [{ hooks: [mine] }],
      },
    };
    const once = mergeTeamHooks(existing, team);
    expect(once.model).toBe("opus");
    expect(once.permissions).toEqual(existing.permissions);
    const hooks = once.hooks as Record<
      string,
      { matcher?: string; hooks: { command: string }[] }[]
    >;
    expect(hooks.Notification).toEqual(existing.hooks.Notification);
    expect(hooks.PostToolUse?.[0]).toEqual(existing.hooks.PostToolUse[0]);
    expect(hooks.PostToolUse?.[1]?.hooks[0]?.command).toBe(`${team} hook post-tool-use`);
    // The old team hook is gone, the user's own hook in the same group kept.
    expect(hooks.Stop?.[0]?.hooks).toEqual([mine]);
    expect(hooks.Stop?.[1]?.hooks[0]?.command).toBe(`${team} hook stop`);
    expect(mergeTeamHooks(once, team)).toEqual(once);
  });

  it("no settings file yet, or one that is not an object: a fresh one", () => {
    expect(mergeTeamHooks(undefined, team)).toEqual({ hooks: teamHooks(team) });
    expect(mergeTeamHooks([1, 2], team)).toEqual({ hooks: teamHooks(team) });
  });
});

describe("team hook: the input Claude Code writes", () => {
  it("reads the fields it uses, keeps going on unknown ones, and takes bad input as empty (fail open)", () => {
    expect(
      parseHookInput('{"session_id":"s","stop_hook_active":true,"new_field":{"x":1}}'),
    ).toMatchObject({ session_id: "s", stop_hook_active: true });
    expect(parseHookInput("")).toEqual({});
    expect(parseHookInput("not json")).toEqual({});
    expect(parseHookInput('{"stop_hook_active":"yes"}')).toEqual({});
  });
});
