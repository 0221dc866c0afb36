import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { TeamClient } from "../client/team-client.js";
import {
  AttemptOutcome,
  MemberStatus,
  PermissionMode,
  RequestKind,
  RequestStatus,
} from "../gen/team/v1/enums_pb.js";
import type { RequestRecord } from "../gen/team/v1/records_pb.js";
import type { LeadLog } from "./lead.js";

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
  // Each request is one step, each answer another, each task notification one more.
  const answered = records.filter(
    (r) => r.status === RequestStatus.APPROVED || r.status === RequestStatus.REJECTED,
  );
  const expectedSteps = records.length + answered.length + log.taskNotifications.length;
  const member = (name: string) => members.find((m) => m.name === name);
  const plans = records.filter((r) => r.kind === RequestKind.PLAN_APPROVAL && r.from === "alice");
  const shutdowns = (to: string) =>
    records.filter((r) => r.kind === RequestKind.SHUTDOWN && r.to === to);
  const answer = (r: RequestRecord | undefined) => r?.response?.kind;
  const summaries = log.taskNotifications.map((n) => n.summary);

  const [firstPlan, secondPlan] = plans;
  const firstAnswer = answer(firstPlan);
  const bobs = shutdowns("bob");
  const rejected = bobs.find((r) => r.status === RequestStatus.REJECTED);
  const rejectedAnswer = answer(rejected);
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
      step: `the journal holds every protocol step (${expectedSteps}), accepted, none refused`,
      ok:
        journal.length === expectedSteps &&
        journal.every((a) => a.outcome === AttemptOutcome.ACCEPTED),
    },
  ];
}
