import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { TeamClient } from "../client/team-client.js";
import {
  AttemptOutcome,
  MemberStatus,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskProgress,
  TaskState,
  TaskStatus,
} from "../gen/team/v1/enums_pb.js";
import type { RequestRecord } from "../gen/team/v1/records_pb.js";
import type { LeadLog } from "./lead.js";
import { PLAN } from "./racers.js";

export interface Check {
  step: string;
  ok: boolean;
}

/**
 * Every step of the walkthrough, checked against what the server stored (request records,
 * members) and what the processes did (exit codes), not against what the scripts meant to do.
 */
export async function checkSteps(
  lead: TeamClient,
  log: LeadLog,
  exitCodes: Record<string, number | null | undefined>,
): Promise<Check[]> {
  const created = (r: RequestRecord) => (r.createdAt ? timestampMs(r.createdAt) : 0);
  const records = (await lead.listRequests({ pageSize: 100 })).requests.sort(
    (a, b) => created(a) - created(b),
  );
  const members = await lead.members();
  const journal = (await lead.listAttempts({ pageSize: 500 })).attempts;
  // Each request is one step, each answer another (an assignment has none: it is recorded
  // approved), each task notification a member sent one more (the server writes its own).
  const answered = records.filter(
    (r) =>
      r.kind !== RequestKind.TASK_ASSIGN &&
      (r.status === RequestStatus.APPROVED || r.status === RequestStatus.REJECTED),
  );
  const reported = log.taskNotifications.filter((n) => n.from !== "");
  const refused = journal.filter((a) => a.outcome === AttemptOutcome.REFUSED);
  const expectedSteps = records.length + answered.length + reported.length;
  // A task the walkthrough never recorded is a failed step, not a failed demo.
  const task = async (taskId: string) => (await lead.getTask(taskId).catch(() => undefined))?.task;
  const [parserTask, e2eTask] = [await task("parser-refactor"), await task("e2e-suite")];
  const leadInbox = (await lead.readInbox({ afterSeq: 0, limit: 1000 })).envelopes;
  const answer = (r: RequestRecord | undefined) => r?.response?.kind;
  /** The task a task protocol's request names. */
  const taskOf = (r: RequestRecord | undefined) => {
    const k = r?.request?.kind;
    switch (k?.case) {
      case "taskClaimRequest":
      case "taskAssign":
      case "taskHandoffRequest":
      case "resultSignoffRequest":
        return k.value.taskId;
      default:
        return undefined;
    }
  };
  const claims = records.filter((r) => r.kind === RequestKind.TASK_CLAIM && r.from === "bob");
  const [firstClaim, secondClaim] = claims;
  const firstClaimAnswer = answer(firstClaim);
  const assigned = records.find(
    (r) => r.kind === RequestKind.TASK_ASSIGN && taskOf(r) === "parser-refactor",
  );
  const handoff = records.find(
    (r) => r.kind === RequestKind.TASK_HANDOFF && r.from === "bob" && r.to === "carol",
  );
  const handoffAnswer = answer(handoff);
  const signoffs = records.filter(
    (r) => r.kind === RequestKind.RESULT_SIGNOFF && taskOf(r) === "parser-refactor",
  );
  const [firstSignoff, secondSignoff] = signoffs;
  const firstSignoffAnswer = answer(firstSignoff);
  const member = (name: string) => members.find((m) => m.name === name);
  const plans = records.filter((r) => r.kind === RequestKind.PLAN_APPROVAL && r.from === "alice");
  const shutdowns = (to: string) =>
    records.filter((r) => r.kind === RequestKind.SHUTDOWN && r.to === to);
  const summaries = log.taskNotifications.map((n) => n.summary);

  const [firstPlan, secondPlan] = plans;
  const firstAnswer = answer(firstPlan);
  const bobs = shutdowns("bob");
  const rejected = bobs.find((r) => r.status === RequestStatus.REJECTED);
  const rejectedAnswer = answer(rejected);
  // The plan: five tasks as the lead made them; the race for plan-1 and what followed.
  const planTasks = await Promise.all(PLAN.map((t) => task(t.id)));
  const [plan1, plan2] = planTasks;
  const { winner, loser } = log.race;
  const raceRefusals = journal.filter(
    (a) =>
      a.outcome === AttemptOutcome.REFUSED &&
      a.action === "task_claim_request" &&
      a.rule === "one-owner" &&
      (a.member === "dave" || a.member === "erin"),
  );
  const readyNotice = leadInbox.find(
    (e) =>
      e.from === "" &&
      e.message?.kind.case === "taskNotification" &&
      e.message.kind.value.status === TaskStatus.READY &&
      e.message.kind.value.taskId === "plan-2",
  );
  const stoppedAndExited = (name: string) =>
    shutdowns(name).some((r) => r.status === RequestStatus.APPROVED) &&
    member(name)?.status === MemberStatus.STOPPED &&
    exitCodes[name] === 0;

  return [
    {
      step: "alice's first plan was rejected with feedback",
      ok:
        firstPlan?.status === RequestStatus.REJECTED &&
        firstAnswer?.case === "planApprovalResponse" &&
        firstAnswer.value.feedback.trim() !== "",
    },
    {
      step: "alice resubmitted, the lead approved, alice inherited permission mode default",
      ok:
        plans.length === 2 &&
        secondPlan?.status === RequestStatus.APPROVED &&
        member("alice")?.permissionMode === PermissionMode.DEFAULT,
    },
    {
      step: "task notifications reached the lead with the seed's summaries",
      ok:
        summaries.includes('Agent "refactor the parser" completed') &&
        summaries.includes(
          'Agent "run the e2e suite" failed: no browser installed on this runner',
        ) &&
        summaries.includes('Agent "run the integration tests" completed'),
    },
    {
      step: "bob rejected a shutdown with a reason and kept working",
      ok:
        rejectedAnswer?.case === "shutdownResponse" &&
        rejectedAnswer.value.reason.trim() !== "" &&
        log.taskNotifications.some((n) => n.from === "bob" && n.taskId === "integration-tests"),
    },
    {
      step: "alice approved her shutdown, was stopped and exited 0",
      ok: stoppedAndExited("alice"),
    },
    {
      step: "bob approved the second shutdown, was stopped and exited 0",
      ok: stoppedAndExited("bob"),
    },
    {
      step: "carol (an MCP client of team mcp) reported her task, approved her shutdown, was stopped, saw her token refused and exited 0",
      ok:
        log.taskNotifications.some((n) => n.from === "carol" && n.taskId === "docs") &&
        stoppedAndExited("carol"),
    },
    {
      step: "bob's first claim of e2e-suite was rejected with a reason",
      ok:
        taskOf(firstClaim) === "e2e-suite" &&
        firstClaim?.status === RequestStatus.REJECTED &&
        firstClaimAnswer?.case === "taskClaimResponse" &&
        firstClaimAnswer.value.reason.trim() !== "",
    },
    {
      step: "bob claimed e2e-suite again once the parser landed, and the lead approved",
      ok:
        claims.length === 2 &&
        secondClaim !== undefined &&
        taskOf(secondClaim) === "e2e-suite" &&
        secondClaim.status === RequestStatus.APPROVED,
    },
    {
      step: "the lead assigned parser-refactor to alice",
      ok: assigned?.to === "alice" && assigned.status === RequestStatus.APPROVED,
    },
    {
      step: "alice's first sign-off was rejected with feedback, the second approved: parser-refactor is done",
      ok:
        signoffs.length === 2 &&
        firstSignoff?.status === RequestStatus.REJECTED &&
        firstSignoffAnswer?.case === "resultSignoffResponse" &&
        firstSignoffAnswer.value.feedback.trim() !== "" &&
        secondSignoff?.status === RequestStatus.APPROVED &&
        parserTask?.state === TaskState.DONE &&
        parserTask.owner === "alice",
    },
    {
      step: "bob handed e2e-suite to carol, who accepted over MCP; her stop released it to the lead",
      ok:
        handoff !== undefined &&
        taskOf(handoff) === "e2e-suite" &&
        handoff.status === RequestStatus.APPROVED &&
        handoffAnswer?.case === "taskHandoffResponse" &&
        handoffAnswer.value.accept &&
        log.taskNotifications.some((n) => n.from === "carol" && n.taskId === "e2e-suite") &&
        e2eTask?.state === TaskState.UNOWNED &&
        leadInbox.some(
          (e) =>
            e.from === "" &&
            e.message?.kind.case === "taskNotification" &&
            e.message.kind.value.taskId === "e2e-suite",
        ),
    },
    {
      step: "the lead made a five-task plan on the task list, each task waiting on the ones before",
      ok: PLAN.every(
        (t, i) =>
          planTasks[i]?.subject === t.subject &&
          planTasks[i]?.blockedBy.join(",") === t.blockedBy.join(","),
      ),
    },
    {
      step: "dave and erin raced for its one ready task: one claim held, the other refused (one-owner)",
      ok:
        winner !== "" &&
        raceRefusals.length === 1 &&
        raceRefusals[0]?.member !== winner &&
        plan1?.owner === winner &&
        plan1.status === TaskProgress.COMPLETED,
    },
    {
      step: "plan-1's sign-off made plan-2 ready, the lead was told, and the loser took it and completed it",
      ok:
        readyNotice !== undefined &&
        loser !== "" &&
        loser !== winner &&
        plan2?.owner === loser &&
        plan2.status === TaskProgress.COMPLETED &&
        planTasks[3]?.ready === false &&
        planTasks[3]?.openBlockers.join(",") === "plan-3",
    },
    {
      step: "dave and erin approved their shutdowns, were stopped and exited 0",
      ok: stoppedAndExited("dave") && stoppedAndExited("erin"),
    },
    {
      step: `the journal holds every protocol step (${expectedSteps} accepted, and the one refused: the race's losing claim)`,
      ok:
        journal.length === expectedSteps + 1 &&
        refused.length === 1 &&
        refused[0]?.rule === "one-owner",
    },
  ];
}
