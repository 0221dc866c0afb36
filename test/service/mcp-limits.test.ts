import { expect, it } from "vitest";
import { describeEachDatabase } from "../support/harness.js";
import { callTool, connectMcp } from "../support/mcp-clients.js";
import { inbox } from "../support/protocol-helpers.js";

describeEachDatabase(
  "MCP: the server's limits hold over /mcp",
  (env) => {
    it("send_message over /mcp is held to the member's send rate, as an RPC is (every request shares one limiter)", async () => {
      const t = await env().team("alice");
      const alice = await connectMcp("http", env().server.url, t.member("alice").token);
      for (let i = 0; i < 3; i++) {
        const ok = await callTool(alice, "send_message", { to: "team-lead", message: `m${i}` });
        expect(ok.isError, ok.text).toBeFalsy();
      }
      const refused = await callTool(alice, "send_message", { to: "team-lead", message: "m3" });
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/^send-rate: member "alice" may send 1 message a second/);
      expect(await inbox(t.lead)).toHaveLength(3);
    });
  },
  { sendRate: { perSecond: 1, burst: 3 } },
);
