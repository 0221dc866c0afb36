import { Code } from "@connectrpc/connect";
import { TeamError } from "../client/team-error.js";
import { TaskProgress } from "../gen/team/v1/enums_pb.js";
import type { Teammate, TeammateContext } from "./teammates.js";

/** The plan the lead makes for the racers: five tasks, each waiting on the ones before. */
export const PLAN: { id: string; subject: string; blockedBy: string[] }[] = [
  { id: "plan-1", subject: "Design the wire format", blockedBy: [] },
  { id: "plan-2", subject: "Write the encoder", blockedBy: ["plan-1"] },
  { id: "plan-3", subject: "Write the decoder", blockedBy: ["plan-1"] },
  { id: "plan-4", subject: "Round-trip tests", blockedBy: ["plan-2", "plan-3"] },
  { id: "plan-5", subject: "Release notes", blockedBy: ["plan-4"] },
];

/** The lead's word to a racer that a task became ready for it. */
export const readyWord = (taskId: string) => `ready for you: ${taskId}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * dave and erin: each claims the lowest task of the plan that nothing open blocks when the
 * lead says the plan is up. Both claim the one such task at once; the server keeps one claim
 * and refuses the other (one-owner). The winner works once the lead approves its claim and asks for the sign-off;
 * the loser waits until the lead tells it a task became ready (the winner's sign-off unblocked
 * it), and takes that one. Each accepts a shutdown once it holds no unfinished task.
 */
export function createRacer(): Teammate {
  let working: string | undefined;
  const claim = async (taskId: string, ctx: TeammateContext) => {
    try {
      const asked = await ctx.client.claimTask(taskId, { note: "I can start now" });
      ctx.say(`claimed ${taskId} (${asked.requestId})`);
    } catch (err) {
      const e = TeamError.fromError(err);
      if (e.code !== Code.FailedPrecondition) throw err;
      ctx.say(`lost the race for ${taskId}: ${e.violation?.rule}: ${e.violation?.sentence}`);
    }
  };
  return {
    async handle(envelope, ctx) {
      const kind = envelope.message?.kind;
      if (kind?.case === "text" && kind.value.startsWith("the plan is up")) {
        // The lowest task nothing open blocks: the other racer may have it already, and then
        // the server says so (one-owner), as it does to the slower of two claims at once.
        const open = (await ctx.client.listTasks({})).tasks
          .filter(
            (t) =>
              t.taskId.startsWith("plan-") &&
              t.openBlockers.length === 0 &&
              t.status !== TaskProgress.COMPLETED,
          )
          .map((t) => t.taskId)
          .sort();
        ctx.say(`unblocked tasks: ${open.join(", ") || "none"}`);
        if (open[0]) await claim(open[0], ctx);
      } else if (kind?.case === "text" && kind.value.startsWith("ready for you: ")) {
        await claim(kind.value.slice("ready for you: ".length), ctx);
      } else if (kind?.case === "taskClaimResponse" && kind.value.approve) {
        const task = (await ctx.client.listTasks({ owner: envelope.to })).tasks.find(
          (t) => t.status !== TaskProgress.COMPLETED && t.taskId.startsWith("plan-"),
        );
        working = task?.taskId;
        if (!working) return "continue";
        ctx.say(`claim approved: ${working} is mine, in progress`);
        await sleep(150); // the work
        const asked = await ctx.client.requestSignoff(working, `${working} done, tests green`);
        ctx.say(`asked the lead to sign off ${working} (${asked.requestId})`);
      } else if (kind?.case === "resultSignoffResponse" && kind.value.approve) {
        ctx.say(`${working} signed off: completed`);
        working = undefined;
      } else if (kind?.case === "shutdownRequest") {
        if (working) {
          await ctx.client.rejectShutdown(envelope.requestId, `still working on ${working}`);
          return "continue";
        }
        ctx.say(`approving shutdown ${envelope.requestId}; exiting`);
        await ctx.client.approveShutdown(envelope.requestId);
        return "exit";
      }
      return "continue";
    },
  };
}
