import { requestKindName, requestStatusName } from "../client/names.js";
import { toPromptText } from "../client/prompt-text.js";
import type { TeamClient } from "../client/team-client.js";
import type { Transcript } from "./transcript.js";

/** What the lead saw and did, for the final check. */
export interface LeadLog {
  plans: string[];
  taskNotifications: { from: string; taskId: string; summary: string }[];
  shutdowns: { member: string; requestId: string; approve: boolean; reason: string }[];
}

const REVIEW_FEEDBACK =
  "too risky: move files to trash/ instead of rm -rf, and keep the old parser behind a flag";

/**
 * The lead's script: welcome the team, review alice's plans (reject the first with feedback,
 * approve the revision), hand bob the integration tests once alice reports, and ask both to
 * shut down; ask bob again after he reports. Returns once both shutdowns are approved.
 */
export async function runLead(
  lead: TeamClient,
  transcript: Transcript,
  signal: AbortSignal,
): Promise<LeadLog> {
  const log: LeadLog = { plans: [], taskNotifications: [], shutdowns: [] };
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

  const inbox = lead.inbox({ signal });
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
        say(`approving plan ${envelope.requestId}`);
        await lead.approvePlan(envelope.requestId, { to: envelope.from });
      }
      await confirm(envelope.requestId);
    } else if (kind?.case === "taskNotification") {
      // What an LLM lead would read: the seed's <task-notification> block.
      say(toPromptText(envelope));
      const n = kind.value;
      log.taskNotifications.push({ from: envelope.from, taskId: n.taskId, summary: n.summary });
      if (n.taskId === "parser-refactor") {
        await lead.sendText("bob", "the parser landed: run the integration tests now");
        say("told bob to run the integration tests");
        await askToStop("alice", "your task is done");
        await askToStop("bob", "wrapping up the team");
      } else if (n.taskId === "integration-tests") {
        await askToStop("bob", "your tests are reported");
      } else if (n.taskId === "docs") {
        await askToStop("carol", "the docs are written");
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
      if (["alice", "bob", "carol"].every((m) => stopped.has(m))) break;
    }
  }
  return log;
}
