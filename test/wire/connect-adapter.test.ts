import net from "node:net";
import { expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase } from "../support/harness.js";

/** Sends raw bytes on a connection of its own; resolves with all it got once it closes. */
function exchange(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let received = "";
    const socket = net.connect(Number(port), hostname, () => socket.end(bytes));
    socket.setEncoding("latin1").on("data", (d: string) => {
      received += d;
    });
    socket.once("error", reject);
    socket.once("close", () => resolve(received));
  });
}

/** server/http/connect-adapter.ts: what lies between Node's requests and connect's handlers. */
describeEachDatabase("the connect adapter", (env) => {
  it("an RPC request without an authority (HTTP/1.0, no Host) gets 400, and the server keeps serving", async () => {
    // connect-node's universalRequestFromNodeRequest throws for it; thrown in the request
    // listener, that was an uncaught exception.
    const path = `/${TeamService.typeName}/${TeamService.method.listMembers.name}`;
    const answer = await exchange(
      env().server.url,
      `POST ${path} HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.[01] 400 /);
    const team = await env().team();
    expect((await team.lead.listMembers({})).members.length).toBe(1);
  });

  it("a path no RPC has is 404; /mcp is the MCP endpoint's", async () => {
    const missing = await fetch(`${env().server.url}/team.v1.TeamService/NoSuchMethod`, {
      method: "POST",
    });
    expect(missing.status).toBe(404);
    // The MCP endpoint answers (here: no token) rather than the 404 fallback.
    const mcp = await fetch(`${env().server.url}/mcp?x=1`, { method: "POST" });
    expect(mcp.status).toBe(401);
  });
});
