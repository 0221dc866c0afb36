import { expect, it } from "vitest";
import { MemberStatus, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { spawnAgent } from "../support/agent-process.js";
import { waitFor, withTimeout } from "../support/child-server.js";
import { describeEachDatabase } from "../support/harness.js";
import { inbox, shutdownRequest, text } from "../support/protocol-helpers.js";

const AGENT_TIMEOUT_MS = 20_000;

/** Runs test/agents/grpc-js-agent.ts as its own process, as a teammate with `token`. */
function startAgent(target: string, token: string) {
  return spawnAgent(process.execPath, ["--import", "tsx", "test/agents/grpc-js-agent.ts", target], {
    TEAM_TOKEN: token,
  });
}

describeEachDatabase("a grpc-js agent (proto-loader, no generated code)", (env) => {
  it("streams its inbox, answers a text, and approves a shutdown: its stream then ends and it exits 0", async () => {
    const t = await env().team("worker");
    const target = new URL(env().server.url).host;
    const agent = startAgent(target, t.member("worker").token);
    try {
      // Waiting in the inbox before the agent connects: the backlog part of the stream.
      await t.lead.send({ to: "worker", message: text("are you there?") });
      await waitFor("the agent's echo in the lead's inbox", AGENT_TIMEOUT_MS, () =>
        agent.events().some((e) => e.event === "echoed") ? true : undefined,
      );
      const [echo] = await inbox(t.lead);
      expect(echo).toMatchObject({ from: "worker", to: "team-lead" });
      expect(echo?.message?.kind).toEqual({ case: "text", value: "echo: are you there?" });

      // The shutdown handshake: delivered live on the open stream, approved by the agent.
      const asked = await t.lead.send({ to: "worker", message: shutdownRequest("all done") });
      const answered = await t.lead.awaitRequest({
        requestId: asked.requestId,
        timeout: { seconds: 15n },
      });
      expect(answered.request?.status).toBe(RequestStatus.APPROVED);

      const code = await withTimeout("the agent to exit", AGENT_TIMEOUT_MS, agent.exited);
      expect(code, agent.output()).toBe(0);
      expect(agent.events()).toEqual([
        { event: "envelope", seq: "1", from: "team-lead", kind: "text" },
        { event: "echoed", seq: "1" },
        { event: "envelope", seq: "2", from: "team-lead", kind: "shutdownRequest" },
        { event: "shutdown_approved", requestId: asked.requestId },
        // The server ends the stream of a member that approved its shutdown.
        { event: "stream_ended", code: "OK", details: "" },
      ]);
      const members = (await t.lead.listMembers({})).members;
      expect(members.find((m) => m.name === "worker")?.status).toBe(MemberStatus.STOPPED);
      expect((await inbox(t.lead)).map((e) => e.message?.kind.case)).toEqual([
        "text",
        "shutdownResponse",
      ]);
    } finally {
      agent.kill();
      await agent.exited;
    }
  }, 60_000);
});
