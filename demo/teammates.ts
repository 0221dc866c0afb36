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
 * the rejection, works once it is approved, reports the task, and accepts a shutdown.
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
      } else if (kind?.case === "planApprovalResponse") {
        ctx.say(
          `plan approved; working in permission mode ${permissionModeName(kind.value.permissionMode)}`,
        );
        await sleep(200); // the work
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
 * bob: runs the integration tests once the parser lands. A shutdown request that arrives
 * while they run is rejected with a reason; after reporting the results he accepts one.
 */
export function createTester(): Teammate {
  let running = false;
  return {
    async handle(envelope, ctx) {
      const kind = envelope.message?.kind;
      if (kind?.case === "text" && envelope.to === "*") {
        await ctx.client.sendText(
          envelope.from,
          "bob here: I start once the parser refactor lands",
        );
      } else if (kind?.case === "text" && kind.value.includes("run the integration tests")) {
        running = true;
        ctx.say("running the integration tests");
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
    await sleep(800);
    await ctx.client.notifyTask({
      taskId: "e2e-suite",
      status: "failed",
      description: "run the e2e suite",
      error: "no browser installed on this runner",
      usage: { totalTokens: 2_100, toolUses: 4, durationMs: 400 },
    });
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
