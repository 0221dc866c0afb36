import { requestKindName, requestStatusName } from "../client/names.js";
import { toPromptText } from "../client/prompt-text.js";
import type { TeamClient } from "../client/team-client.js";
import { TaskStatus } from "../gen/team/v1/enums_pb.js";
import { PLAN, readyWord } from "./racers.js";
import type { Transcript } from "./transcript.js";

/** What the lead saw and did, for the final check. */
export interface LeadLog {
  plans: string[];
  taskNotifications: { from: string; taskId: string; summary: string }[];
  shutdowns: { member: string; requestId: string; approve: boolean; reason: string }[];
  /** Who won plan-1's race (its approved claim), and who took plan-2 after it. */
  race: { winner: string; loser: string };
}

const RACERS = ["dave", "erin"];
const EVERYONE = ["alice", "bob", "carol", ...RACERS];

const REVIEW_FEEDBACK =
  "too risky: move files to trash/ instead of rm -rf, and keep the old parser behind a flag";
const CLAIM_REFUSAL = "the parser has not landed yet; claim it again when I say so";
const SIGNOFF_FEEDBACK = "add a changelog entry for --new-parser";

/**
 * The lead's script: welcome the team; answer bob's claims of e2e-suite (the first, before the
 * parser landed, rejected with a reason; the next approved); review alice's plans (reject the first with feedback, assign
 * her parser-refactor and approve the revision); review her result (reject the first
 * sign-off with feedback, approve the second); hand bob the integration tests once alice
 * reports, and ask both to shut down; ask bob again after he reports, and carol once she
 * reports the e2e suite bob handed her. Returns once all three shutdowns are approved.
 */
export async function runLead(
  lead: TeamClient,
  transcript: Transcript,
  signal: AbortSignal,
): Promise<LeadLog> {
  const log: LeadLog = {
    plans: [],
    taskNotifications: [],
    shutdowns: [],
    race: { winner: "", loser: "" },
  };
  const say = (text: string) => transcript.line("team-lead", text);
  /** A request's state as the server has it, after an answer. */
  const confirm = async (requestId: string) => {
    const r = await lead.getRequest(requestId);
    transcript.state(
      `request ${r.requestId} (${requestKindName(r.kind)} ${r.from} → ${r.to}): ${requestStatusName(r.status)}`,
    );
  };
  const askToStop = async (member: string, reason: string) => {
    const sent = await lead.requestShutdown(member, { reason });
    say(`asked ${member} to shut down (${sent.requestId}): ${reason}`);
  };

  let claims = 0;
  let signoffs = 0;
  const inbox = lead.inbox({ signal });
  // The plan on the task list: five tasks, only the first ready.
  for (const task of PLAN) {
    await lead.createTask(task.subject, { taskId: task.id, blockedBy: task.blockedBy });
  }
  say(
    `created the plan: ${PLAN.map((t) => `${t.id}${t.blockedBy.length ? ` (after ${t.blockedBy.join(", ")})` : ""}`).join(", ")}`,
  );
  for (const racer of RACERS) {
    await lead.sendText(racer, "the plan is up: take the lowest ready task");
  }
  say("welcoming the team");
  await lead.broadcast(
    "welcome: alice refactors the parser (plan first), bob runs the integration tests after",
  );

  for await (const envelope of inbox) {
    const kind = envelope.message?.kind;
    transcript.received("team-lead", envelope);
    if (kind?.case === "planApprovalRequest") {
      log.plans.push(envelope.requestId);
      if (log.plans.length === 1) {
        say(`rejecting plan ${envelope.requestId}`);
        await lead.rejectPlan(envelope.requestId, REVIEW_FEEDBACK, { to: envelope.from });
      } else {
        // Assigned before the approval: alice owns the task by the time she starts on it.
        const assigned = await lead.assignTask("parser-refactor", envelope.from, {
          note: "the plan you are about to get approved",
        });
        say(`assigned parser-refactor to ${envelope.from} (${assigned.requestId})`);
        say(`approving plan ${envelope.requestId}`);
        await lead.approvePlan(envelope.requestId, { to: envelope.from });
      }
      await confirm(envelope.requestId);
    } else if (kind?.case === "taskClaimRequest" && kind.value.taskId.startsWith("plan-")) {
      // The plan's claims are approved as they come: the server let only one through per task.
      say(`approving ${envelope.from}'s claim of ${kind.value.taskId}`);
      await lead.approveClaim(envelope.requestId, { to: envelope.from });
      if (kind.value.taskId === "plan-1") log.race.winner = envelope.from;
      else if (kind.value.taskId === "plan-2") log.race.loser = envelope.from;
      await confirm(envelope.requestId);
    } else if (kind?.case === "resultSignoffRequest" && kind.value.taskId.startsWith("plan-")) {
      say(`signing off ${kind.value.taskId}`);
      await lead.approveSignoff(envelope.requestId, { to: envelope.from });
      await confirm(envelope.requestId);
      if (kind.value.taskId === "plan-2") {
        for (const racer of RACERS) await askToStop(racer, "the plan's first steps are done");
      }
    } else if (kind?.case === "taskNotification" && kind.value.status === TaskStatus.READY) {
      // The server's word that a task of the plan became ready (plan-1's sign-off unblocked
      // plan-2 and plan-3): the racer that lost plan-1 takes plan-2.
      say(toPromptText(envelope));
      const n = kind.value;
      log.taskNotifications.push({ from: envelope.from, taskId: n.taskId, summary: n.summary });
      const other = RACERS.find((r) => r !== log.race.winner);
      if (n.taskId === "plan-2" && other) {
        await lead.sendText(other, readyWord(n.taskId));
        say(`told ${other} that ${n.taskId} is ready`);
      }
    } else if (kind?.case === "taskClaimRequest") {
      claims++;
      const early = claims === 1;
      say(`${early ? "rejecting" : "approving"} ${envelope.from}'s claim of ${kind.value.taskId}`);
      if (early) await lead.rejectClaim(envelope.requestId, CLAIM_REFUSAL, { to: envelope.from });
      else await lead.approveClaim(envelope.requestId, { to: envelope.from });
      await confirm(envelope.requestId);
    } else if (kind?.case === "resultSignoffRequest") {
      say(toPromptText(envelope));
      signoffs++;
      if (signoffs === 1) {
        say(`rejecting the result of ${kind.value.taskId}`);
        await lead.rejectSignoff(envelope.requestId, SIGNOFF_FEEDBACK, { to: envelope.from });
      } else {
        say(`signing off ${kind.value.taskId}`);
        await lead.approveSignoff(envelope.requestId, { to: envelope.from });
      }
      await confirm(envelope.requestId);
    } else if (kind?.case === "taskNotification") {
      // What an LLM lead would read: the seed's <task-notification> block.
      say(toPromptText(envelope));
      const n = kind.value;
      log.taskNotifications.push({ from: envelope.from, taskId: n.taskId, summary: n.summary });
      // The server's own notices (a stopped member's task released) need nothing from us.
      if (envelope.from === "") continue;
      if (n.taskId === "parser-refactor") {
        await lead.sendText("bob", "the parser landed: run the integration tests now");
        say("told bob to run the integration tests");
        await askToStop("alice", "your task is done");
        await askToStop("bob", "wrapping up the team");
      } else if (n.taskId === "integration-tests") {
        await askToStop("bob", "your tests are reported");
      } else if (n.taskId === "e2e-suite" && envelope.from === "carol") {
        await askToStop("carol", "the docs are written and the e2e suite is green");
      }
    } else if (kind?.case === "shutdownResponse") {
      const r = kind.value;
      log.shutdowns.push({
        member: envelope.from,
        requestId: r.requestId,
        approve: r.approve,
        reason: r.reason,
      });
      await confirm(r.requestId);
      if (r.approve) transcript.state(`${envelope.from} is stopped (its token no longer works)`);
      const stopped = new Set(log.shutdowns.filter((s) => s.approve).map((s) => s.member));
      if (EVERYONE.every((m) => stopped.has(m))) break;
    }
  }
  return log;
}
