import { expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { type CliResult, runTeam } from "../support/cli.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";

/**
 * `team lease acquire|renew|release|list` as people and scripts use it: child processes
 * against a live server, judged by exit code, stdout and stderr.
 */
describeEachDatabase("team lease (CLI)", (env) => {
  function ok(result: CliResult): CliResult {
    expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
    return result;
  }

  it("acquire, lease-held naming the holder (exit 1), list, renew, --json, the lead's break, release", async () => {
    const url = env().server.url;
    const anon = createTeamClient({ baseUrl: url });
    const created = await anon.createTeam(uniqueName("cli-leases"));
    const lead = anon.withToken(created.token);
    const tokens: Record<string, string> = {
      "team-lead": created.token,
      alice: (await lead.addMember("alice")).token,
      bob: (await lead.addMember("bob")).token,
    };
    const as = (name: string) => ({ TEAM_URL: url, TEAM_TOKEN: tokens[name] ?? "" });

    const got = ok(
      await runTeam(
        ["lease", "acquire", "src/parser/**", "--ttl", "2m", "--reason", "rewriting the lexer"],
        as("alice"),
      ),
    );
    const id = /^leased (lease_\S+): /.exec(got.stdout)?.[1] ?? "";
    expect(got.stdout).toMatch(
      new RegExp(`^leased ${id}: exclusive "src/parser/\\*\\*" held by alice until \\S+Z\\n$`),
    );

    const held = await runTeam(
      ["lease", "acquire", "src/parser/lexer.ts", "--mode", "shared"],
      as("bob"),
    );
    expect(held).toMatchObject({ code: 1, stdout: "" });
    expect(held.stderr).toMatch(
      /^team: refused by rule lease-held \(failed_precondition\): alice holds an exclusive lease on "src\/parser\/\*\*"/,
    );
    const badMode = await runTeam(["lease", "acquire", "x", "--mode", "mine"], as("bob"));
    expect(badMode.code).toBe(2);

    const listed = ok(await runTeam(["lease", "list"], as("bob")));
    const [header, row, ...rest] = listed.stdout.trim().split("\n");
    expect(header).toMatch(/^LEASE\s+HOLDER\s+MODE\s+RESOURCE\s+EXPIRES\s+REASON$/);
    expect(row).toMatch(
      new RegExp(
        `^${id}\\s+alice\\s+exclusive\\s+src/parser/\\*\\*\\s+\\S+Z\\s+rewriting the lexer$`,
      ),
    );
    expect(rest).toEqual([]);
    const none = ok(await runTeam(["lease", "list", "--resource", "docs/a.md"], as("bob")));
    expect(none.stdout).toBe("no leases\n");

    const renewed = JSON.parse(
      ok(await runTeam(["lease", "renew", id, "--ttl", "1h", "--json"], as("alice"))).stdout,
    ) as { leaseId: string; mode: string; expiresAt: string };
    expect(renewed).toMatchObject({ leaseId: id, mode: "LEASE_MODE_EXCLUSIVE" });
    expect(Date.parse(renewed.expiresAt) - Date.now()).toBeGreaterThan(50 * 60_000);
    const listedJson = JSON.parse(
      ok(await runTeam(["lease", "list", "--holder", "alice", "--json"], as("bob"))).stdout,
    ) as { leases: { leaseId: string }[] };
    expect(listedJson.leases.map((l) => l.leaseId)).toEqual([id]);

    const notHers = await runTeam(["lease", "release", id], as("bob"));
    expect(notHers.code).toBe(1);
    expect(notHers.stderr).toContain("refused by rule lease-holder-only");
    const broke = ok(
      await runTeam(["lease", "release", id, "--reason", "bob needs it"], as("team-lead")),
    );
    expect(broke.stdout).toMatch(
      new RegExp(`^released ${id}: exclusive "src/parser/\\*\\*" held by alice`),
    );
    const told = await lead.withToken(tokens.alice ?? "").readInbox();
    expect(JSON.stringify(told.envelopes.map((e) => e.message?.kind.value))).toContain(
      "bob needs it",
    );

    const own = ok(await runTeam(["lease", "acquire", "src/parser/lexer.ts"], as("bob")));
    const bobId = /^leased (lease_\S+): /.exec(own.stdout)?.[1] ?? "";
    ok(await runTeam(["lease", "release", bobId], as("bob")));
    expect(ok(await runTeam(["lease", "list"], as("bob"))).stdout).toBe("no leases\n");
  }, 180_000);
});
