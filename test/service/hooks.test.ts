import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HookEventName } from "../../client/cli/hooks/hook-events.js";
import { runHook } from "../../client/cli/hooks/run-hook.js";
import { createTeamClient, type TeamClient } from "../../client/index.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";

/**
 * `team hook <event>` in-process against a real server: what Claude Code would read on the
 * hook's stdout, and what the server's records say afterwards.
 */
describeEachDatabase("hooks: Claude Code's hook events", (env) => {
  async function team(): Promise<{ lead: TeamClient; worker: TeamClient }> {
    const anon = createTeamClient({ baseUrl: env().server.url });
    const created = await anon.createTeam(uniqueName("team"), { leadPermissionMode: "plan" });
    const lead = anon.withToken(created.token);
    const worker = lead.withToken((await lead.addMember("worker")).token);
    return { lead, worker };
  }

  interface Run {
    code: number;
    out: unknown;
    stderr: string[];
  }
  async function hook(
    event: HookEventName,
    client: TeamClient,
    input: Record<string, unknown> = {},
    stateDir?: string,
  ): Promise<Run> {
    let printed = "";
    const stderr: string[] = [];
    const code = await runHook({
      event,
      client,
      stdin: JSON.stringify({ session_id: "s-1", hook_event_name: event, ...input }),
      write: async (text) => {
        printed += text;
      },
      warn: (line) => stderr.push(line),
      maxBlocks: 3,
      deadlineMs: 5_000,
      stateDir: stateDir ?? (await mkdtemp(join(tmpdir(), "hooks-"))),
    });
    return { code, out: printed ? JSON.parse(printed) : undefined, stderr };
  }
  const reasonOf = (r: Run) => (r.out as { decision: string; reason: string }).reason;
  const contextOf = (r: Run) =>
    (r.out as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput
      .additionalContext;

  describe("stop", () => {
    it("blocks while a shutdown request waits, naming it and the exact answer; lets go once answered", async () => {
      const { lead, worker } = await team();
      const asked = await lead.requestShutdown("worker", { reason: "all done" });
      const state = await mkdtemp(join(tmpdir(), "hooks-"));

      const first = await hook("stop", worker, { stop_hook_active: false }, state);
      expect(first.code).toBe(0);
      expect((first.out as { decision: string }).decision).toBe("block");
      expect(reasonOf(first)).toContain(asked.requestId);
      expect(reasonOf(first)).toContain("all done");
      expect(reasonOf(first)).toContain(
        `shutdown_response to "team-lead": { request_id: "${asked.requestId}", approve: true }`,
      );
      // The request's message was shown: it is acked, and not shown twice as new.
      expect((await worker.readInbox()).envelopes).toHaveLength(0);

      // Still pending on the next stop: blocked again, from the request's record.
      const again = await hook("stop", worker, { stop_hook_active: true }, state);
      expect(reasonOf(again)).toContain(asked.requestId);
      expect(reasonOf(again)).toContain("approve: true");

      await worker.rejectShutdown(asked.requestId, "still testing");
      const after = await hook("stop", worker, { stop_hook_active: true }, state);
      expect(after.out).toBeUndefined();
    });

    it("at most N blocks in a row, then the stop goes through (never a loop)", async () => {
      const { lead, worker } = await team();
      await lead.requestShutdown("worker");
      const state = await mkdtemp(join(tmpdir(), "hooks-"));
      const decisions: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await hook("stop", worker, { stop_hook_active: i > 0 }, state);
        decisions.push(r.out ? "block" : "stop");
      }
      expect(decisions).toEqual(["block", "block", "block", "stop", "block"]);
      // A stop that follows no block starts the count again.
      const fresh = await hook("stop", worker, { stop_hook_active: false }, state);
      expect(fresh.out).toBeDefined();
    });

    it("the lead is held by a plan waiting for its answer; the teammate by the answer it has not read", async () => {
      const { lead, worker } = await team();
      const plan = await worker.submitPlan("1. add tests\n2. refactor");
      const leadStop = await hook("subagent-stop", lead);
      expect(reasonOf(leadStop)).toContain(plan.requestId);
      expect(reasonOf(leadStop)).toContain("1. add tests");
      expect(reasonOf(leadStop)).toContain(
        `plan_approval_response to "worker": { request_id: "${plan.requestId}", approve: true }`,
      );
      await lead.approvePlan(plan.requestId);
      expect((await hook("stop", lead)).out).toBeUndefined();

      const workerStop = await hook("stop", worker);
      expect(reasonOf(workerStop)).toContain("approved your plan");
      expect(reasonOf(workerStop)).toContain('"default"');
      // Shown once: the next stop goes through.
      expect((await hook("stop", worker, { stop_hook_active: true })).out).toBeUndefined();
    });

    it("nothing waiting: no answer at all", async () => {
      const { worker } = await team();
      const r = await hook("stop", worker);
      expect(r).toEqual({ code: 0, out: undefined, stderr: [] });
    });
  });

  describe("context", () => {
    it("post-tool-use gives the messages that arrived since the last hook call, acked once given", async () => {
      const { lead, worker } = await team();
      expect((await hook("post-tool-use", worker, { tool_name: "Bash" })).out).toBeUndefined();
      await lead.sendText("worker", "also update the changelog");
      const asked = await lead.requestShutdown("worker", { reason: "time is up" });

      const r = await hook("post-tool-use", worker, { tool_name: "Bash" });
      expect(
        (r.out as { hookSpecificOutput: { hookEventName: string } }).hookSpecificOutput,
      ).toMatchObject({ hookEventName: "PostToolUse" });
      expect(contextOf(r)).toContain("also update the changelog");
      expect(contextOf(r)).toContain(asked.requestId);
      expect(contextOf(r)).toContain("time is up");
      const { envelopes, ackedSeq } = await worker.readInbox();
      expect(envelopes).toHaveLength(0);
      expect(ackedSeq).toBe(2n);
      expect((await hook("post-tool-use", worker, { tool_name: "Bash" })).out).toBeUndefined();
    });

    it("user-prompt-submit answers in its own event's shape", async () => {
      const { lead, worker } = await team();
      await lead.sendText("worker", "hello");
      const r = await hook("user-prompt-submit", worker, { prompt: "go on" });
      expect(r.out).toEqual({
        hookSpecificOutput: {
          hookEventName: "UserPromptSubmit",
          additionalContext: expect.stringContaining("hello"),
        },
      });
    });

    it("session-start gives the role's duties, the members and the backlog", async () => {
      const { lead, worker } = await team();
      await lead.sendText("worker", "start with the parser");
      const r = await hook("session-start", worker, { source: "startup" });
      const text = contextOf(r);
      expect(text).toContain('You are "worker" (teammate)');
      expect(text).toContain("- team-lead (lead, active)");
      expect(text).toContain("- worker (teammate, active)");
      expect(text).toContain('{type: "shutdown_response", request_id, approve: true}');
      expect(text).toContain("start with the parser");
      const leadStart = contextOf(await hook("session-start", lead, { source: "startup" }));
      expect(leadStart).toContain("plan_approval_response");
    });

    it("a request answered since it was shown is shown again as no longer pending (never answered twice)", async () => {
      const { lead, worker } = await team();
      const asked = await lead.requestShutdown("worker");
      // The model answered, but the hook that showed the request died before its ack.
      await worker.rejectShutdown(asked.requestId, "busy");
      const r = await hook("post-tool-use", worker, { tool_name: "Bash" });
      expect(contextOf(r)).toContain("no longer pending: it is rejected");
      expect(contextOf(r)).not.toContain("approve: true }");
    });
  });

  it("the server unreachable: fails open with one line on stderr and no answer", async () => {
    const nowhere = createTeamClient({
      baseUrl: "http://127.0.0.1:9",
      token: "tp_nothing",
      timeoutMs: 1_000,
    });
    for (const event of ["stop", "post-tool-use", "session-start"] as const) {
      const r = await hook(event, nowhere);
      expect(r.code).toBe(1);
      expect(r.out).toBeUndefined();
      expect(r.stderr).toHaveLength(1);
      expect(r.stderr[0]).toMatch(new RegExp(`^team hook ${event}: not applied`));
    }
  });
});
