import { expect, it } from "vitest";
import { READ_MAX_BYTES } from "../../server/app.js";
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
      expect(refused.text).toMatch(/^send-rate: member "alice" may send 0.01 messages a second/);
      expect(await inbox(t.lead)).toHaveLength(3);
    });

    it("/mcp shares the RPCs' body-size limit", async () => {
      const t = await env().team("worker");
      const big = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "ping",
        pad: "x".repeat(READ_MAX_BYTES),
      });
      const res = await fetch(`${env().server.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${t.member("worker").token}`,
        },
        body: big,
      });
      expect(res.status).toBe(413);
      expect(await res.text()).toContain(`larger than ${READ_MAX_BYTES} bytes`);
    });
  },
  // One token per 100 s: however slow the machine, no token comes back during the test.
  { sendRate: { perSecond: 0.01, burst: 3 } },
);
