import { expect, it } from "vitest";
import { describeEachDatabase } from "../support/harness.js";
import { text } from "../support/protocol-helpers.js";

/**
 * One member's token holding many wait_for_messages calls over /mcp at once (each held an
 * MCP server, a request and a response, about 400 KB, with no cap): past
 * MAX_MCP_WAITS_PER_MEMBER (3 here) a call is refused at once with an isError result naming
 * the limit, and a slot frees when a pending call ends.
 */
describeEachDatabase(
  "MCP: concurrent wait_for_messages calls per member are capped",
  (env) => {
    /** A raw /mcp tool call (no SDK client: a hostile one need not be polite). */
    const callWait = (token: string, id: number, timeoutSeconds: number, signal?: AbortSignal) =>
      fetch(`${env().server.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name: "wait_for_messages", arguments: { timeout_seconds: timeoutSeconds } },
        }),
        ...(signal ? { signal } : {}),
      }).then(async (res) => {
        const body = (await res.json()) as {
          result?: { isError?: boolean; content: { text: string }[] };
        };
        return {
          isError: body.result?.isError === true,
          text: body.result?.content.map((c) => c.text).join("\n") ?? JSON.stringify(body),
        };
      });

    it("20 concurrent waits of one token: 17 refused at once naming the limit; the admitted ones are real waits; once they end, the member may wait again", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").token;
      // The admitted three run one after another (one cursor per member), 2 s each at most.
      const calls = Array.from({ length: 20 }, (_, i) => callWait(alice, i, 2));
      const settled: { isError: boolean; text: string }[] = [];
      for (const c of calls) void c.then((r) => settled.push(r));
      const deadline = Date.now() + 20_000;
      while (settled.length < 17 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      // The first 17 answers are the refusals: none waited for an admitted call to end.
      expect(settled.slice(0, 17).every((r) => r.isError)).toBe(true);
      for (const r of settled.slice(0, 17)) {
        expect(r.text).toMatch(
          /^mcp-waits-per-member: member "alice" already has 3 wait_for_messages calls pending \(MAX_MCP_WAITS_PER_MEMBER\)/,
        );
      }
      // Another member is not held by alice's cap.
      const bob = await callWait(t.member("bob").token, 100, 0);
      expect(bob.isError, bob.text).toBe(false);
      // The admitted waits are real: a message reaches one of them.
      await t.lead.send({ to: "alice", message: text("wake up") });
      const results = await Promise.all(calls);
      expect(results.filter((r) => r.isError)).toHaveLength(17);
      expect(results.some((r) => !r.isError && r.text.includes("wake up"))).toBe(true);
      // Their slots are free again.
      const again = await callWait(alice, 200, 0);
      expect(again.isError, again.text).toBe(false);
    });
  },
  { maxMcpWaitsPerMember: 3 },
);
