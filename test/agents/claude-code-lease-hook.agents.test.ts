import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { CLAUDE_CODE_VERSION, claudeProject } from "../support/claude-code.js";
import { type ModelRequest, startFakeAnthropic } from "../support/fake-anthropic.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { flatten } from "../support/scripted-model.js";

/**
 * The real Claude Code with `team hooks install`: its scripted model reads a file another
 * member holds an exclusive lease on and tries to Edit it. The PreToolUse hook denies the
 * edit: the file is unchanged, and the model is shown the reason (the holder, its pattern,
 * how to ask).
 */
describeEachDatabase(`Claude Code ${CLAUDE_CODE_VERSION} with the lease hook`, (env) => {
  it("an Edit of a file under alice's exclusive lease is denied; the file is unchanged; the model reads why", async () => {
    const url = env().server.url;
    const anon = createTeamClient({ baseUrl: url });
    const lead = anon.withToken((await anon.createTeam(uniqueName("team"))).token);
    const alice = lead.withToken((await lead.addMember("alice")).token);
    const bobToken = (await lead.addMember("bob")).token;
    const lease = await alice.acquireLease("src/**", {
      ttlSeconds: 600,
      reason: "rewriting the parser",
    });

    const original = "export const parse = () => 1;\n";
    let file = "";
    /** The tool calls the model made so far, by name, in order. */
    const called = (request: ModelRequest) =>
      request.messages.flatMap((m) =>
        m.role === "assistant" && typeof m.content !== "string"
          ? m.content.filter((b) => b.type === "tool_use").map((b) => b.name ?? "")
          : [],
      );
    const model = (request: ModelRequest) => {
      // Claude Code's side requests (titles and the like) have no Edit tool: answer plainly.
      if (!(request.tools ?? []).some((t) => t.name === "Edit")) return { text: "ok" };
      const done = called(request);
      if (!done.includes("Read"))
        return { toolCalls: [{ name: "Read", input: { file_path: file } }] };
      if (!done.includes("Edit")) {
        return {
          toolCalls: [
            {
              name: "Edit",
              input: { file_path: file, old_string: "() => 1", new_string: "() => 2" },
            },
          ],
        };
      }
      return { text: "The file is leased by alice; I will ask her." };
    };
    const fake = await startFakeAnthropic(model);
    try {
      const project = await claudeProject(fake.url);
      await writeFile(join(project.dir, "README.md"), "project\n");
      await mkdir(join(project.dir, "src"));
      file = join(project.dir, "src", "parser.ts");
      await writeFile(file, original);
      const install = await project.team(["hooks", "install", "--dir", project.dir]);
      expect(install.code, install.stderr).toBe(0);
      const result = await project.ask(
        "You are bob. Change parse to return 2 in src/parser.ts.",
        ["--allowedTools", "Read,Edit"],
        { env: { TEAM_URL: url, TEAM_TOKEN: bobToken } },
      );
      expect(result.code, result.stderr).toBe(0);

      // The file is as it was.
      expect(await readFile(file, "utf8")).toBe(original);
      // The model was shown the denial of its Edit, with the reason.
      const editResult = fake.requests
        .flatMap((r) => r.messages)
        .flatMap((m) => (typeof m.content === "string" ? [] : m.content))
        .filter((b) => b.type === "tool_result")
        .map((b) => flatten(b.content))
        .find((text) => text.includes("lease-held"));
      expect(editResult, "the Edit's result as the model read it").toContain(
        `src/parser.ts is under alice's exclusive lease on "src/**" (${lease.leaseId}, until `,
      );
      expect(editResult).toContain("rewriting the parser");
      expect(editResult).toContain("send_message to alice");
    } finally {
      await fake.close();
    }
  });
});
