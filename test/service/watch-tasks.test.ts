import { expect, it } from "vitest";
import {
  MemberChange,
  MemberRole,
  RequestKind,
  RequestStatus,
} from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import {
  assign,
  claimRequest,
  claimResponse,
  handoffRequest,
  handoffResponse,
  signoffRequest,
} from "../support/task-helpers.js";
import { expectFeedOrder, watch } from "../support/team-watch.js";

/** An event as a line: what a reader of the feed sees of the task protocols. */
function line(e: TeamEvent): string {
  switch (e.change.case) {
    case "envelope": {
      const { recipient, envelope } = e.change.value;
      return `${envelope?.from || "(server)"} -> ${recipient}: ${envelope?.message?.kind.case}`;
    }
    case "request": {
      const r = e.change.value.request;
      return `request ${RequestKind[r?.kind ?? 0]} ${r?.from} -> ${r?.to} ${RequestStatus[r?.status ?? 0]}`;
    }
    case "member":
      return `member ${e.change.value.member?.name} ${MemberChange[e.change.value.change]}`;
    default:
      return "?";
  }
}

/**
 * WatchTeam shows the task protocols as it shows the others: every envelope, every request
 * event (created, answered, canceled by a change of owner, assigned), and a stopped owner's
 * release (its member event and the lead's server-written task_notification), in an order
 * that agrees with each inbox and request.
 */
describeEachDatabase("WatchTeam: the task protocols in the team feed", (env) => {
  it("claims, assignments, handoffs, sign-offs, cancellations and a stopped owner's release, in order", async () => {
    const t = await env().team("alice", "bob");
    const alice = t.member("alice").client;
    const bob = t.member("bob").client;
    const eye = env().client(
      (await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token,
    );
    const w = watch(eye);
    const c = await alice.send({ to: "team-lead", message: claimRequest("t1") });
    await t.lead.send({ to: "alice", message: claimResponse(c.requestId, true) });
    await t.lead.send({ to: "bob", message: assign("t2") });
    await alice.send({ to: "team-lead", message: signoffRequest("t1") });
    const h = await alice.send({ to: "bob", message: handoffRequest("t1") });
    await bob.send({ to: "alice", message: handoffResponse(h.requestId, true) });
    await t.lead.removeMember({ name: "bob" });
    const notice = "(server) -> team-lead: taskNotification";
    await w.until(
      "the lead's notices of bob's two tasks",
      (x) => x.events().filter((e) => line(e) === notice).length === 2,
    );
    const events = w.events();
    expectFeedOrder(events);
    expect(events.map(line).filter((l) => !l.startsWith("member ") || l.includes("bob R"))).toEqual(
      [
        "alice -> team-lead: taskClaimRequest",
        "request TASK_CLAIM alice -> team-lead PENDING",
        "request TASK_CLAIM alice -> team-lead APPROVED",
        "team-lead -> alice: taskClaimResponse",
        "team-lead -> bob: taskAssign",
        "request TASK_ASSIGN team-lead -> bob APPROVED",
        "alice -> team-lead: resultSignoffRequest",
        "request RESULT_SIGNOFF alice -> team-lead PENDING",
        "alice -> bob: taskHandoffRequest",
        "request TASK_HANDOFF alice -> bob PENDING",
        // bob accepts: the handoff is approved, the sign-off canceled, alice and the lead told.
        "request TASK_HANDOFF alice -> bob APPROVED",
        "request RESULT_SIGNOFF alice -> team-lead CANCELED",
        "(server) -> alice: requestUpdate",
        "(server) -> team-lead: requestUpdate",
        "bob -> alice: taskHandoffResponse",
        // bob is removed: its member event, then one notice per task it held (t1 and t2).
        "member bob REMOVED",
        notice,
        notice,
      ],
    );
    w.stop();
  });
});
