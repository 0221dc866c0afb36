import { describe, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { callTool, connectMcp, mcpWays } from "../support/mcp-clients.js";

/**
 * The lease tools through the MCP SDK's own Client (over `team mcp` and /mcp): acquire,
 * the lease-held refusal naming the holder, list (all, by holder, by an overlapping path),
 * renew, release, and the lead's break; text first, structuredContent snake_case with words.
 */
describeEachDatabase("MCP: leases", (env) => {
  function oneStyle(r: { text: string; structuredContent?: unknown }) {
    const s = r.structuredContent as Record<string, unknown>;
    expect(Object.keys(s)[0]).toBe("text");
    expect(s.text).toBe(r.text);
    const json = JSON.stringify(s);
    expect(json).not.toMatch(/[A-Z]{3,}_[A-Z]{3,}/);
    expect(json).not.toMatch(/"[a-z]+[A-Z][a-zA-Z]*":/);
  }

  for (const way of mcpWays) {
    describe(way, () => {
      it("acquire, lease-held naming the holder, list, renew, release, and the lead's break", async () => {
        const url = env().server.url;
        const anon = createTeamClient({ baseUrl: url });
        const created = await anon.createTeam(uniqueName("team"));
        const lead = anon.withToken(created.token);
        const [alice, bob] = await Promise.all([lead.addMember("alice"), lead.addMember("bob")]);
        const [a, b, asLead] = await Promise.all([
          connectMcp(way, url, alice.token),
          connectMcp(way, url, bob.token),
          connectMcp(way, url, created.token),
        ]);

        const got = await callTool(a, "acquire_lease", {
          resource: "src/parser/**",
          ttl_seconds: 60,
          reason: "rewriting the lexer",
        });
        expect(got.isError, got.text).toBeFalsy();
        oneStyle(got);
        const lease = (got.structuredContent as { lease: Record<string, string> }).lease;
        expect(lease).toMatchObject({
          resource: "src/parser/**",
          mode: "exclusive",
          holder: "alice",
          reason: "rewriting the lexer",
        });
        const id = lease.lease_id ?? "";
        expect(id).toMatch(/^lease_/);
        expect(got.text).toContain(`Leased "src/parser/**" (exclusive) until ${lease.expires_at}`);
        expect(got.text).toContain(id);

        // bob is refused, told who holds it and how to ask.
        const held = await callTool(b, "acquire_lease", {
          resource: "src/parser/lexer.ts",
          mode: "shared",
        });
        expect(held.isError).toBe(true);
        expect(held.text).toMatch(
          /^lease-held: alice holds an exclusive lease on "src\/parser\/\*\*"/,
        );
        expect(held.text).toContain("send_message");
        const docs = await callTool(b, "acquire_lease", { resource: "docs/**", mode: "shared" });
        expect((docs.structuredContent as { lease: { mode: string } }).lease.mode).toBe("shared");

        const all = await callTool(b, "list_leases", {});
        oneStyle(all);
        expect(all.text.split("\n")).toEqual([
          expect.stringMatching(
            new RegExp(
              `^${id} alice exclusive "src/parser/\\*\\*" until \\S+Z: rewriting the lexer$`,
            ),
          ),
          expect.stringMatching(/^lease_\S+ bob shared "docs\/\*\*" until \S+Z$/),
        ]);
        const over = await callTool(b, "list_leases", { resource: "src/parser/lexer.ts" });
        expect(
          (over.structuredContent as { leases: { holder: string }[] }).leases.map((l) => l.holder),
        ).toEqual(["alice"]);
        const bobs = await callTool(a, "list_leases", { holder: "bob" });
        expect((bobs.structuredContent as { leases: unknown[] }).leases).toHaveLength(1);

        // Renew: the holder only.
        const renewed = await callTool(a, "renew_lease", { lease_id: id, ttl_seconds: 600 });
        expect(renewed.isError, renewed.text).toBeFalsy();
        oneStyle(renewed);
        const expires = (renewed.structuredContent as { lease: { expires_at: string } }).lease
          .expires_at;
        expect(Date.parse(expires)).toBeGreaterThan(Date.parse(lease.expires_at ?? "") + 300_000);
        const notHers = await callTool(b, "renew_lease", { lease_id: id });
        expect(notHers.text).toMatch(/^lease-holder-only: /);

        // The lead breaks it with a reason, alice is told; without one it is refused.
        const noReason = await callTool(asLead, "release_lease", { lease_id: id });
        expect(noReason.text).toMatch(/^reason-on-reject: /);
        const broke = await callTool(asLead, "release_lease", {
          lease_id: id,
          reason: "bob needs the parser",
        });
        expect(broke.isError, broke.text).toBeFalsy();
        oneStyle(broke);
        expect(broke.text).toBe(`Released ${id} on "src/parser/**" (alice's, who is told).`);
        const told = await callTool(a, "wait_for_messages", { timeout_seconds: 0 });
        expect(told.text).toContain("bob needs the parser");

        // bob's own release, and then nothing is left.
        const bobId = (docs.structuredContent as { lease: { lease_id: string } }).lease.lease_id;
        const released = await callTool(b, "release_lease", { lease_id: bobId });
        expect(released.text).toBe(`Released ${bobId} on "docs/**".`);
        const none = await callTool(b, "list_leases", {});
        expect(none.text).toBe("No leases.");
        expect(none.structuredContent).toEqual({ text: "No leases.", leases: [] });
      });
    });
  }
});
