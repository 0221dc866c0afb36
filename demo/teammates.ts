import { permissionModeName } from "../client/names.js";
import type { TeamClient } from "../client/team-client.js";
import type { Envelope } from "../gen/team/v1/records_pb.js";

/** What a scripted teammate can do besides reading its inbox. */
export interface TeammateContext {
  client: TeamClient;
  /** One transcript line. */
  say(text: string): void;
}

/**
 * A scripted agent (no LLM): it reacts to each envelope of its inbox. `handle` resolves to
 * "exit" once the teammate has approved its own shutdown.
 */
export interface Teammate {
  handle(envelope: Envelope, ctx: TeammateContext): Promise<"continue" | "exit">;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A promise settled by a later envelope. */
function settledLater(): { done: Promise<void>; settle(): void } {
  let settle = () => {};
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { done, settle };
}

/** Approves a shutdown unless `busy()` says why not. */
async function answerShutdown(
  envelope: Envelope,
  ctx: TeammateContext,
  busy: () => string | undefined,
): Promise<"continue" | "exit"> {
  const why = busy();
  if (why) {
    ctx.say(`rejecting shutdown ${envelope.requestId}: ${why}`);
    await ctx.client.rejectShutdown(envelope.requestId, why);
    return "continue";
  }
  ctx.say(`approving shutdown ${envelope.requestId}; exiting`);
  await ctx.client.approveShutdown(envelope.requestId);
  return "exit";
}

/**
 * alice: plans before she acts. Submits a risky plan on the lead's welcome, revises it after
 * the rejection, works once it is approved (the lead assigns her the task), asks the lead to
 * sign off the result, revises it after the feedback, reports the task once it is signed
 * off, and accepts a shutdown.
 */
export function createPlanner(): Teammate {
  return {
    async handle(envelope, ctx) {
      const kind = envelope.message?.kind;
      if (kind?.case === "text" && envelope.to === "*") {
        ctx.say("submitting plan v1");
        await ctx.client.submitPlan(
          "1. rm -rf src/parser/ and rewrite it from scratch\n2. run the unit tests",
        );
      } else if (kind?.case === "planApprovalResponse" && !kind.value.approve) {
        ctx.say(`plan rejected ("${kind.value.feedback}"); submitting plan v2`);
        await ctx.client.submitPlan(
          "1. move src/parser/ to trash/ (recoverable)\n2. rewrite the parser behind --new-parser\n3. run the unit tests",
        );
      } else if (kind?.case === "taskAssign") {
        ctx.say(`assigned ${kind.value.taskId} (${envelope.requestId})`);
      } else if (kind?.case === "planApprovalResponse") {
        ctx.say(
          `plan approved; working in permission mode ${permissionModeName(kind.value.permissionMode)}`,
        );
        await sleep(200); // the work
        const asked = await ctx.client.requestSignoff(
          "parser-refactor",
          "parser rewritten behind --new-parser; 128 unit tests pass",
          { summary: "the new parser, behind a flag" },
        );
        ctx.say(`asked the lead to sign off parser-refactor (${asked.requestId})`);
      } else if (kind?.case === "resultSignoffResponse" && !kind.value.approve) {
        ctx.say(`result rejected ("${kind.value.feedback}"); revising`);
        const asked = await ctx.client.requestSignoff(
          "parser-refactor",
          "parser rewritten behind --new-parser; 128 unit tests pass; CHANGELOG.md has the entry",
          { summary: "the new parser, behind a flag, with a changelog entry" },
        );
        ctx.say(`asked again (${asked.requestId})`);
      } else if (kind?.case === "resultSignoffResponse") {
        ctx.say("result signed off: parser-refactor is done");
        await ctx.client.notifyTask({
          taskId: "parser-refactor",
          status: "completed",
          description: "refactor the parser",
          result: "parser rewritten behind --new-parser; 128 unit tests pass",
          usage: { totalTokens: 18_420, toolUses: 37, durationMs: 200 },
        });
        ctx.say("reported task parser-refactor: completed");
      } else if (kind?.case === "shutdownRequest") {
        return answerShutdown(envelope, ctx, () => undefined);
      }
      return "continue";
    },
  };
}

/**
 * bob: claims the e2e suite on the welcome (rejected: too early) and again once the parser
 * lands (approved); runs the tests, hands the e2e suite, which his runner cannot run, to
 * carol and waits for her answer. A shutdown request that arrives
 * while the tests run is rejected with a reason; after reporting the results he accepts one.
 */
export function createTester(): Teammate {
  let running = false;
  // Settled by his inbox, awaited by the tests running beside it.
  const refused = settledLater();
  const claimed = settledLater();
  const handedOff = settledLater();
  return {
    async handle(envelope, ctx) {
      const kind = envelope.message?.kind;
      if (kind?.case === "text" && envelope.to === "*") {
        await ctx.client.sendText(
          envelope.from,
          "bob here: I start once the parser refactor lands",
        );
        const asked = await ctx.client.claimTask("e2e-suite", {
          note: "I will run it with the integration tests",
        });
        ctx.say(`claimed e2e-suite (${asked.requestId})`);
      } else if (kind?.case === "taskClaimResponse" && !kind.value.approve) {
        ctx.say(`claim rejected ("${kind.value.reason}")`);
        refused.settle();
      } else if (kind?.case === "taskClaimResponse") {
        ctx.say("claim approved: e2e-suite is mine");
        claimed.settle();
      } else if (kind?.case === "taskHandoffResponse") {
        ctx.say(`handoff ${kind.value.accept ? "accepted" : "declined"} by ${envelope.from}`);
        handedOff.settle();
      } else if (kind?.case === "text" && kind.value.includes("run the integration tests")) {
        running = true;
        // A claim while the first is still pending would be refused (one-owner).
        await refused.done;
        const asked = await ctx.client.claimTask("e2e-suite", { note: "the parser landed" });
        ctx.say(`claimed e2e-suite again (${asked.requestId}); running the integration tests`);
        void runTests(ctx).then(
          () => {},
          (err) => ctx.say(`tests could not be reported: ${(err as Error).message}`),
        );
      } else if (kind?.case === "shutdownRequest") {
        return answerShutdown(envelope, ctx, () =>
          running
            ? "the integration tests are still running; ask again when I report them"
            : undefined,
        );
      }
      return "continue";
    },
  };

  async function runTests(ctx: TeammateContext): Promise<void> {
    await claimed.done;
    await sleep(800);
    await ctx.client.notifyTask({
      taskId: "e2e-suite",
      status: "failed",
      description: "run the e2e suite",
      error: "no browser installed on this runner",
      usage: { totalTokens: 2_100, toolUses: 4, durationMs: 400 },
    });
    const offered = await ctx.client.handOffTask(
      "e2e-suite",
      "carol",
      "no browser on my runner; the suite is in e2e/, run it with --new-parser",
    );
    ctx.say(`handed e2e-suite to carol (${offered.requestId}); waiting for her answer`);
    // Answered before he reports: once he reports, the lead may stop him at once.
    await handedOff.done;
    // Done before the report goes out: the lead may answer it with a shutdown request at once.
    running = false;
    await ctx.client.notifyTask({
      taskId: "integration-tests",
      status: "completed",
      description: "run the integration tests",
      result: "42 passed, 0 failed (new parser on)",
      usage: { totalTokens: 5_730, toolUses: 12, durationMs: 800 },
    });
    ctx.say("reported tasks e2e-suite (failed) and integration-tests (completed)");
  }
}
