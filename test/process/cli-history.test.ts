import { generateKeyPairSync } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { type CliResult, runTeam, type ServeProcess, startTeamServe } from "../support/cli.js";
import { createScratchPgDatabase, databaseKinds } from "../support/databases.js";
import { uniqueName } from "../support/harness.js";

/**
 * The history commands as processes against a `team serve` on each database: `team search`,
 * `team thread`, `team export TEAM -o FILE`, `team verify FILE [--key PUB]` (offline) and
 * `team import FILE` with the admin token. The embedded server signs with the key it
 * generates in its data folder; the PostgreSQL one with EXPORT_SIGNING_KEY from configuration.
 */

const ADMIN = "tp_admin_history_cli_test";

function ok(result: CliResult): CliResult {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(0);
  return result;
}

for (const { kind, skip } of databaseKinds()) {
  describe.skipIf(skip)(`team search, thread, export, verify, import [${kind}]`, () => {
    let dir: string;
    let serve: ServeProcess;
    let dropDatabase: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      dir = await mkdtemp(join(os.tmpdir(), "tp-history-"));
      const env: Record<string, string> = { TEAM_ADMIN_TOKEN: ADMIN };
      const flags = ["--port", "0"];
      if (kind === "embedded") {
        flags.push("--data-dir", join(dir, "data"));
      } else {
        const scratch = await createScratchPgDatabase("template");
        dropDatabase = scratch.drop;
        env.DATABASE_URL = scratch.url;
        const { privateKey } = generateKeyPairSync("ed25519");
        env.EXPORT_SIGNING_KEY = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
      }
      // A deadline, not a figure: the embedded database starts slowly on a loaded machine.
      serve = await startTeamServe(flags, 120_000, env);
    }, 150_000);

    afterAll(async () => {
      await serve?.stop();
      await dropDatabase?.();
      await rm(dir, { recursive: true, force: true });
    });

    const as = (token: string) => ({ TEAM_URL: serve.url, TEAM_TOKEN: token });

    it("finds a word with its marked snippet and thread, prints the thread oldest first, and says a refusal plainly", async () => {
      const admin = createTeamClient({ baseUrl: serve.url, token: ADMIN });
      const created = await admin.createTeam(uniqueName("history"));
      const lead = admin.withToken(created.token);
      const alice = admin.withToken((await lead.addMember("alice")).token);
      await lead.sendText("alice", "the parser drops tabs");
      const asked = (await alice.rpc.readInbox({ afterSeq: 0n, limit: 10 })).envelopes[0];
      expect(asked?.id).toMatch(/^env_/);
      await alice.sendText("team-lead", "fixed it, tabs kept", { replyTo: asked?.id ?? "" });
      await lead.sendText("alice", "lunch at noon?");

      const found = ok(await runTeam(["search", "parser"], as(created.token)));
      expect(found.stdout).toContain(`thread ${asked?.threadId}: text: the «parser» drops tabs`);
      expect(found.stdout).not.toContain("lunch");
      const none = ok(await runTeam(["search", "zebra"], as(created.token)));
      expect(none.stdout.trim()).toBe("nothing found");

      const thread = ok(await runTeam(["thread", asked?.threadId ?? ""], as(created.token)));
      const lines = thread.stdout.trim().split("\n");
      expect(lines).toHaveLength(2);
      expect(lines[0]).toContain("team-lead → alice  text: the parser drops tabs");
      expect(lines[1]).toContain("alice → team-lead  text: fixed it, tabs kept");
      expect(lines[1]).toContain(`↩ ${asked?.id}`);

      const tooLong = await runTeam(["search", "x".repeat(1025)], as(created.token));
      expect(tooLong.code).not.toBe(0);
      expect(tooLong.stderr).toContain("query is longer than 1024 bytes");
      const unknown = await runTeam(["thread", "env_nosuchthread"], as(created.token));
      expect(unknown.code).not.toBe(0);
      expect(unknown.stderr.toLowerCase()).toContain("not_found");
    }, 120_000);

    it("exports with the server's key, verifies offline, refuses a changed byte, and imports with the admin token as a new team with new tokens", async () => {
      const admin = createTeamClient({ baseUrl: serve.url, token: ADMIN });
      const name = uniqueName("moving");
      const created = await admin.createTeam(name);
      const lead = admin.withToken(created.token);
      await lead.addMember("alice");
      await lead.sendText("alice", "the parser is done");
      const file = join(dir, `${name}.jsonl`);

      const wrong = await runTeam(["export", "another-team", "-o", file], as(created.token));
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain(`the token belongs to team "${name}", not "another-team"`);
      expect(existsSync(file)).toBe(false);

      const exported = ok(await runTeam(["export", name, "-o", file], as(created.token)));
      expect(exported.stdout).toMatch(/signed with key [0-9a-f]{16}/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(existsSync(join(dir, "data", "export-signing-key.pem"))).toBe(kind === "embedded");
      const pem = /-----BEGIN PUBLIC KEY-----[\s\S]*-----END PUBLIC KEY-----/.exec(
        exported.stdout,
      )?.[0];
      expect(pem).toBeDefined();
      const keyFile = join(dir, `${name}.pub.pem`);
      await writeFile(keyFile, `${pem}\n`);

      // Offline: no TEAM_URL, no token.
      const verified = ok(await runTeam(["verify", file, "--key", keyFile]));
      expect(verified.stdout).toMatch(new RegExp(`^ok: team "${name}"`));
      const otherKey = generateKeyPairSync("ed25519")
        .publicKey.export({ type: "spki", format: "pem" })
        .toString();
      const wrongKey = await runTeam(["verify", file, "--key", otherKey]);
      expect(wrongKey.code).toBe(1);
      expect(wrongKey.stdout).toMatch(
        /^refused:\n {2}key: the bundle is signed by key [0-9a-f]{16}, not by the expected key [0-9a-f]{16}/,
      );

      // One byte changed: "alice" → "alicf" in the member's record.
      const bytes = await readFile(file);
      const at = bytes.indexOf("alice");
      expect(at).toBeGreaterThan(0);
      const changedBytes = Buffer.from(bytes);
      changedBytes[at + 4] = "f".charCodeAt(0);
      expect(Buffer.compare(changedBytes, bytes)).not.toBe(0);
      const changed = join(dir, `${name}.changed.jsonl`);
      await writeFile(changed, changedBytes);
      const refused = await runTeam(["verify", changed, "--key", keyFile]);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(/^refused:\n {2}sha256: /);
      const importRefused = await runTeam(["import", changed, "--as", `${name}-x`], {
        TEAM_URL: serve.url,
        TEAM_ADMIN_TOKEN: ADMIN,
      });
      expect(importRefused.code).toBe(1);
      expect(importRefused.stderr).toContain("bundle-verify");

      // A member's token is not the admin token.
      const notAdmin = await runTeam(["import", file, "--as", `${name}-y`], {
        TEAM_URL: serve.url,
        TEAM_ADMIN_TOKEN: created.token,
      });
      expect(notAdmin.code).not.toBe(0);
      expect(notAdmin.stderr).toContain("needs the admin token");

      // The move the bundle is for: the team leaves this server and comes back from the file.
      // (A copy beside the original, --as, keeps the envelope ids and is searched as its own
      // team since migration 014: test/service/history-export.test.ts.)
      await lead.rpc.deleteTeam({ team: name });
      const imported = ok(
        await runTeam(["import", file], {
          TEAM_URL: serve.url,
          TEAM_ADMIN_TOKEN: ADMIN,
        }),
      );
      expect(imported.stdout).toContain(`imported team "${name}"`);
      expect(imported.stdout).toContain("new tokens (shown only once):");
      const token = /team-lead \(lead, active\): (tp_\S+)/.exec(imported.stdout)?.[1] ?? "";
      expect(token).toMatch(/^tp_/);
      expect(token).not.toBe(created.token);
      expect(imported.stdout).toMatch(/alice \(teammate, active\): tp_/);
      const members = ok(await runTeam(["members"], as(token)));
      expect(members.stdout).toContain("alice");
      const moved = ok(await runTeam(["search", "parser"], as(token)));
      expect(moved.stdout).toContain("the «parser» is done");
    }, 120_000);
  });
}
