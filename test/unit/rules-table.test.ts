import { readFileSync } from "node:fs";
import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  type AttemptOutcome,
  MemberRole,
  PermissionMode,
  RequestKind,
  RequestStatus,
  TaskProgress,
  TaskState,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import { ExportTeamRequestSchema, ImportTeamRequestSchema } from "../../gen/team/v1/export_pb.js";
import {
  GetThreadRequestSchema,
  SearchMessagesRequestSchema,
} from "../../gen/team/v1/history_pb.js";
import { type Message, MessageSchema } from "../../gen/team/v1/message_pb.js";
import {
  AckRequestSchema,
  AcquireLeaseRequestSchema,
  AddMemberRequestSchema,
  AwaitRequestRequestSchema,
  CancelRequestRequestSchema,
  CreateTaskRequestSchema,
  CreateTeamRequestSchema,
  DeleteTaskRequestSchema,
  DeleteTeamRequestSchema,
  GetRequestRequestSchema,
  GetTaskRequestSchema,
  ListAttemptsRequestSchema,
  ListLeasesRequestSchema,
  ListMembersRequestSchema,
  ListRequestsRequestSchema,
  ListTasksRequestSchema,
  ReadInboxRequestSchema,
  ReleaseLeaseRequestSchema,
  RemoveMemberRequestSchema,
  RenewLeaseRequestSchema,
  RotateTokenRequestSchema,
  SendRequestSchema,
  SubscribeRequestSchema,
  TeamService,
  UpdateTaskRequestSchema,
  WatchTeamRequestSchema,
} from "../../gen/team/v1/team_service_pb.js";
import { type Caller, callerKey } from "../../server/caller.js";
import {
  MAX_DEPENDENCIES_PER_CALL,
  MAX_MESSAGE_ID_CHARS,
  MAX_NOTE_BYTES,
  MAX_PLAN_BYTES,
  MAX_RESULT_BYTES,
  MAX_SEQ,
  MAX_TASK_LINE_CHARS,
  MAX_TEXT_BYTES,
  MAX_TTL_MS,
  MIN_TTL_MS,
} from "../../server/domain/limits.js";
import { RuleViolationError } from "../../server/errors.js";
import {
  checkRules,
  type Rule,
  type RuleCall,
  rules,
  rulesInterceptor,
} from "../../server/interceptors/rules/table.js";

// The stateless rules table called directly: no server, no database, milliseconds. Each row
// is one call, by the lead or by a teammate, and the rule and field it is refused under (or
// undefined: it passes). The end-to-end rule suites show the same refusals on the wire.

const M = TeamService.method;
const lead: Caller = {
  id: 1,
  teamId: 1,
  teamName: "t",
  name: "lead",
  role: "lead",
  lead: { id: 1, name: "lead", permissionMode: "default" },
};
const mate: Caller = { ...lead, id: 2, name: "ann", role: "teammate" };
const eye: Caller = { ...lead, id: 3, name: "eye", role: "observer" };
const judge: Caller = { ...lead, id: 4, name: "judge", role: "approver" };
const REQ = "req_AAAAAAAAAAAAAAAAAAAAAA";

function call<S extends DescMessage>(
  method: RuleCall["method"],
  schema: S,
  init: MessageInitShape<S>,
  caller: Caller | undefined = mate,
): RuleCall {
  return { method, request: create(schema, init) as RuleCall["request"], caller };
}

type Kind = NonNullable<Exclude<MessageInitShape<typeof MessageSchema>, Message>["kind"]>;
const send = (to: string, kind: Kind, caller = mate, extra: Record<string, unknown> = {}) =>
  call(
    M.send,
    SendRequestSchema,
    { to, message: create(MessageSchema, { kind }), ...extra },
    caller,
  );
const text = (value: string): Kind => ({ case: "text", value });
const shutdown = (reason = ""): Kind => ({ case: "shutdownRequest", value: { reason } });
const shutdownAnswer = (approve: boolean, reason = "", requestId = REQ): Kind => ({
  case: "shutdownResponse",
  value: { requestId, approve, reason },
});
const plan = (value = "1. do it"): Kind => ({
  case: "planApprovalRequest",
  value: { plan: value },
});
const planAnswer = (approve: boolean, feedback = "", requestId = REQ): Kind => ({
  case: "planApprovalResponse",
  value: { requestId, approve, feedback },
});
const task = (value: Record<string, unknown>): Kind => ({
  case: "taskNotification",
  value: { taskId: "t1", status: TaskStatus.COMPLETED, ...value },
});
const claim = (taskId = "t1", note = ""): Kind => ({
  case: "taskClaimRequest",
  value: { taskId, note },
});
const claimAnswer = (approve: boolean, reason = "", requestId = REQ): Kind => ({
  case: "taskClaimResponse",
  value: { requestId, approve, reason },
});
const assign = (taskId = "t1"): Kind => ({ case: "taskAssign", value: { taskId } });
const handoff = (taskId = "t1", note = "half done"): Kind => ({
  case: "taskHandoffRequest",
  value: { taskId, note },
});
const handoffAnswer = (accept: boolean, reason = "", requestId = REQ): Kind => ({
  case: "taskHandoffResponse",
  value: { requestId, accept, reason },
});
const signoff = (result = "done", taskId = "t1"): Kind => ({
  case: "resultSignoffRequest",
  value: { taskId, result },
});
const signoffAnswer = (approve: boolean, feedback = "", requestId = REQ): Kind => ({
  case: "resultSignoffResponse",
  value: { requestId, approve, feedback },
});
const permission = (toolName = "Bash", runtimeRequestId = "abcde"): Kind => ({
  case: "permissionRequest",
  value: { toolName, description: "run ls", inputPreview: "ls -la", runtimeRequestId },
});
const permissionAnswer = (allow: boolean, reason = "", requestId = REQ): Kind => ({
  case: "permissionResponse",
  value: { requestId, allow, reason },
});
const ttl = (seconds: bigint) => ({ ttl: { seconds, nanos: 0 } });

/** Rule id -> refusal ("invalid-argument"), from the rules table in docs/protocols.md. */
const documentedCodes = new Map(
  [
    ...readFileSync(new URL("../../docs/protocols.md", import.meta.url), "utf8").matchAll(
      /^\| `([a-z-]+)` +\|.*\| ([A-Za-z]+) *\|$/gm,
    ),
  ].map(([, rule, code]) => [
    rule,
    (code ?? "").replace(/[A-Z]/g, (l, i) => `${i ? "-" : ""}${l.toLowerCase()}`),
  ]),
);

type Expected = { rule: string; field: string } | undefined;
const by = (rule: string, field = ""): Expected => ({ rule, field });

/** The rule and field a call is refused under; undefined when it passes. */
function refusal(c: RuleCall, table: readonly Rule[] = rules): Expected {
  try {
    checkRules(c, table);
    return undefined;
  } catch (e) {
    if (!(e instanceof RuleViolationError)) throw e;
    return { rule: e.rule, field: e.field };
  }
}

const rows: [string, RuleCall, Expected][] = [
  // size-shape: names
  ["a valid team name", call(M.createTeam, CreateTeamRequestSchema, { team: "demo" }), undefined],
  [
    "an upper-case team name",
    call(M.createTeam, CreateTeamRequestSchema, { team: "Demo" }),
    by("size-shape", "team"),
  ],
  [
    "an empty team name",
    call(M.createTeam, CreateTeamRequestSchema, { team: "" }),
    by("size-shape", "team"),
  ],
  [
    "a lead name with a space",
    call(M.createTeam, CreateTeamRequestSchema, { team: "t", leadName: "a b" }),
    by("size-shape", "lead_name"),
  ],
  [
    "an empty member name",
    call(M.addMember, AddMemberRequestSchema, { name: "" }, lead),
    by("size-shape", "name"),
  ],
  [
    "a 65-character member name",
    call(M.addMember, AddMemberRequestSchema, { name: "a".repeat(65) }, lead),
    by("size-shape", "name"),
  ],
  [
    "removing a member by a bad name",
    call(M.removeMember, RemoveMemberRequestSchema, { name: "-x" }, lead),
    by("size-shape", "name"),
  ],
  [
    "listing requests with a bad party",
    call(M.listRequests, ListRequestsRequestSchema, { party: "A" }),
    by("size-shape", "party"),
  ],
  ["listing requests of anyone", call(M.listRequests, ListRequestsRequestSchema, {}), undefined],
  [
    "the journal of a bad member name",
    call(M.listAttempts, ListAttemptsRequestSchema, { member: "Ä" }),
    by("size-shape", "member"),
  ],
  [
    "the journal of a request id with a NUL",
    call(M.listAttempts, ListAttemptsRequestSchema, { requestId: "req_\u0000" }),
    by("size-shape", "request_id"),
  ],
  [
    "the journal of a malformed but short request id",
    call(M.listAttempts, ListAttemptsRequestSchema, { requestId: "not-an-id" }),
    undefined,
  ],
  // size-shape: sends
  ["text to one member", send("bob", text("hi")), undefined],
  ["text to everyone", send("*", text("hi")), undefined],
  ["text to a bad name", send("Bob", text("hi")), by("size-shape", "to")],
  ["blank text", send("bob", text("  \n")), by("size-shape", "message.text")],
  [
    "text over the limit",
    send("bob", text("x".repeat(MAX_TEXT_BYTES + 1))),
    by("size-shape", "message.text"),
  ],
  ["text at the limit", send("bob", text("x".repeat(MAX_TEXT_BYTES))), undefined],
  [
    "a send with no message",
    call(M.send, SendRequestSchema, { to: "bob" }),
    by("size-shape", "message"),
  ],
  [
    "a message_id too long",
    send("bob", text("hi"), mate, { messageId: "m".repeat(MAX_MESSAGE_ID_CHARS + 1) }),
    by("size-shape", "message_id"),
  ],
  [
    "a message_id with a control character",
    send("bob", text("hi"), mate, { messageId: "a\tb" }),
    by("size-shape", "message_id"),
  ],
  ["a ttl on text", send("bob", text("hi"), mate, ttl(60n)), by("size-shape", "ttl")],
  ["a ttl too short", send("ann", shutdown(), lead, ttl(0n)), by("size-shape", "ttl")],
  ["a ttl of a minute on a shutdown request", send("ann", shutdown(), lead, ttl(60n)), undefined],
  ["a ttl too long on a plan", send("lead", plan(), mate, ttl(10n ** 9n)), by("size-shape", "ttl")],
  [
    "a shutdown reason over the limit",
    send("ann", shutdown("r".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.shutdown_request.reason"),
  ],
  [
    "a shutdown answer without request_id",
    send("lead", shutdownAnswer(true, "", "")),
    by("size-shape", "message.shutdown_response.request_id"),
  ],
  [
    "a plan answer to a malformed request_id",
    send("ann", planAnswer(true, "", "req_short"), lead),
    by("size-shape", "message.plan_approval_response.request_id"),
  ],
  ["a blank plan", send("lead", plan(" ")), by("size-shape", "message.plan_approval_request.plan")],
  [
    "a plan over the limit",
    send("lead", plan("p".repeat(MAX_PLAN_BYTES + 1))),
    by("size-shape", "message.plan_approval_request.plan"),
  ],
  [
    "a task notification without status",
    send("lead", task({ status: TaskStatus.UNSPECIFIED })),
    by("size-shape", "message.task_notification.status"),
  ],
  [
    "a task notification with an unknown status",
    send("lead", task({ status: 9 })),
    by("size-shape", "message.task_notification.status"),
  ],
  [
    "a task result over the limit",
    send("lead", task({ result: "r".repeat(MAX_RESULT_BYTES + 1) })),
    by("size-shape", "message.task_notification.result"),
  ],
  // size-shape: ids and cursors
  [
    "getting a malformed request id",
    call(M.getRequest, GetRequestRequestSchema, { requestId: "x" }),
    by("size-shape", "request_id"),
  ],
  [
    // The sentence quotes at most 64 characters of what was sent, so a long bad id is not echoed whole.
    "getting a malformed request id longer than the quote",
    call(M.getRequest, GetRequestRequestSchema, { requestId: `req_${"!".repeat(100)}` }),
    by("size-shape", "request_id"),
  ],
  [
    "awaiting no request id",
    call(M.awaitRequest, AwaitRequestRequestSchema, {}),
    by("size-shape", "request_id"),
  ],
  [
    "canceling a well-formed request id",
    call(M.cancelRequest, CancelRequestRequestSchema, { requestId: REQ }),
    undefined,
  ],
  ["ack at the largest seq", call(M.ack, AckRequestSchema, { seq: MAX_SEQ }), undefined],
  [
    "ack past the largest seq",
    call(M.ack, AckRequestSchema, { seq: MAX_SEQ + 1n }),
    by("size-shape", "seq"),
  ],
  [
    "read after a seq past the largest",
    call(M.readInbox, ReadInboxRequestSchema, { afterSeq: MAX_SEQ + 1n }),
    by("size-shape", "after_seq"),
  ],
  [
    "subscribe after a seq past the largest",
    call(M.subscribe, SubscribeRequestSchema, { afterSeq: MAX_SEQ + 1n }),
    by("size-shape", "after_seq"),
  ],
  ["subscribe without after_seq", call(M.subscribe, SubscribeRequestSchema, {}), undefined],
  // size-shape: enum values (proto3 enums are open: any number can arrive)
  [
    "a team led in an unknown permission mode",
    call(M.createTeam, CreateTeamRequestSchema, {
      team: "t",
      leadPermissionMode: 42 as PermissionMode,
    }),
    by("size-shape", "lead_permission_mode"),
  ],
  [
    "a team led in plan mode",
    call(M.createTeam, CreateTeamRequestSchema, {
      team: "t",
      leadPermissionMode: PermissionMode.PLAN,
    }),
    undefined,
  ],
  [
    "a member added in an unknown permission mode",
    call(
      M.addMember,
      AddMemberRequestSchema,
      { name: "bob", permissionMode: -1 as PermissionMode },
      lead,
    ),
    by("size-shape", "permission_mode"),
  ],
  [
    "a member added with an unknown role",
    call(M.addMember, AddMemberRequestSchema, { name: "bob", role: 7 as MemberRole }, lead),
    by("size-shape", "role"),
  ],
  [
    "a member added as an observer",
    call(M.addMember, AddMemberRequestSchema, { name: "eye", role: MemberRole.OBSERVER }, lead),
    undefined,
  ],
  [
    "requests listed by an unknown status",
    call(M.listRequests, ListRequestsRequestSchema, { status: 77 as RequestStatus }),
    by("size-shape", "status"),
  ],
  [
    "requests listed by an unknown kind",
    call(M.listRequests, ListRequestsRequestSchema, { kind: 77 as RequestKind }),
    by("size-shape", "kind"),
  ],
  [
    "requests listed by pending plan approvals",
    call(M.listRequests, ListRequestsRequestSchema, {
      status: RequestStatus.PENDING,
      kind: RequestKind.PLAN_APPROVAL,
    }),
    undefined,
  ],
  [
    "the journal filtered by an unknown outcome",
    call(M.listAttempts, ListAttemptsRequestSchema, { outcome: 5 as AttemptOutcome }),
    by("size-shape", "outcome"),
  ],
  [
    "awaiting with a negative timeout",
    call(M.awaitRequest, AwaitRequestRequestSchema, { requestId: REQ, timeout: { seconds: -1n } }),
    by("size-shape", "timeout"),
  ],
  [
    "awaiting with no timeout",
    call(M.awaitRequest, AwaitRequestRequestSchema, { requestId: REQ }),
    undefined,
  ],
  // server-only, no-broadcast
  [
    "a client-made request_update",
    send("bob", { case: "requestUpdate", value: { requestId: REQ } }),
    by("server-only", "message.request_update"),
  ],
  ["a shutdown request broadcast", send("*", shutdown(), lead), by("no-broadcast", "to")],
  ["a plan broadcast", send("*", plan()), by("no-broadcast", "to")],
  ["a task notification broadcast", send("*", task({})), by("no-broadcast", "to")],
  // the shutdown protocol
  ["the lead asks a teammate to stop", send("ann", shutdown("done"), lead), undefined],
  ["a teammate asks another to stop", send("bob", shutdown()), by("lead-only-shutdown")],
  [
    "the lead asks itself to stop",
    send("lead", shutdown(), lead),
    by("shutdown-to-teammate", "to"),
  ],
  ["a teammate approves its shutdown to the lead", send("lead", shutdownAnswer(true)), undefined],
  [
    "a teammate answers a shutdown to another teammate",
    send("bob", shutdownAnswer(true)),
    by("response-to-lead", "to"),
  ],
  [
    "a teammate rejects its shutdown without a reason",
    send("lead", shutdownAnswer(false, "  ")),
    by("reason-on-reject", "message.shutdown_response.reason"),
  ],
  [
    "a teammate rejects its shutdown with a reason",
    send("lead", shutdownAnswer(false, "still testing")),
    undefined,
  ],
  // the plan-approval protocol
  ["a teammate submits a plan to the lead", send("lead", plan()), undefined],
  ["a teammate submits a plan to another teammate", send("bob", plan()), by("plan-to-lead", "to")],
  ["the lead submits a plan to itself", send("lead", plan(), lead), by("plan-to-lead", "to")],
  ["the lead rejects a plan, no feedback needed", send("ann", planAnswer(false), lead), undefined],
  ["a teammate approves a plan", send("bob", planAnswer(true)), by("lead-only-approval")],
  [
    "a teammate approves a plan addressed to the lead",
    send("lead", planAnswer(true)),
    by("lead-only-approval"),
  ],
  // task notifications
  ["a teammate reports a task to the lead", send("lead", task({ result: "ok" })), undefined],
  [
    "a teammate reports a task to another teammate",
    send("bob", task({})),
    by("task-to-lead", "to"),
  ],
  // the task protocols: shapes
  [
    "a claim of a task id with spaces and slashes",
    send("lead", claim("issue #13 / part 2")),
    undefined,
  ],
  [
    "a claim without a task id",
    send("lead", claim("  ")),
    by("size-shape", "message.task_claim_request.task_id"),
  ],
  [
    "a claim of a 129-character task id",
    send("lead", claim("t".repeat(129))),
    by("size-shape", "message.task_claim_request.task_id"),
  ],
  ["a claim of a 128-character task id", send("lead", claim("t".repeat(128))), undefined],
  [
    "an assignment of a task id with a control character",
    send("ann", assign("a\u0000b"), lead),
    by("size-shape", "message.task_assign.task_id"),
  ],
  [
    "a handoff note over the limit",
    send("bob", handoff("t1", "n".repeat(MAX_NOTE_BYTES + 1))),
    by("size-shape", "message.task_handoff_request.note"),
  ],
  [
    "a sign-off of a blank result",
    send("lead", signoff(" ")),
    by("size-shape", "message.result_signoff_request.result"),
  ],
  [
    "a sign-off of a result over the limit",
    send("lead", signoff("r".repeat(MAX_RESULT_BYTES + 1))),
    by("size-shape", "message.result_signoff_request.result"),
  ],
  [
    "a claim answer to a malformed request_id",
    send("ann", claimAnswer(true, "", "req_x"), lead),
    by("size-shape", "message.task_claim_response.request_id"),
  ],
  [
    "a handoff answer without request_id",
    send("bob", handoffAnswer(true, "", "")),
    by("size-shape", "message.task_handoff_response.request_id"),
  ],
  [
    "a sign-off answer whose feedback is over the limit",
    send("ann", signoffAnswer(false, "f".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.result_signoff_response.feedback"),
  ],
  ["a ttl of a minute on a claim", send("lead", claim(), mate, ttl(60n)), undefined],
  ["a ttl of a minute on a handoff", send("bob", handoff(), mate, ttl(60n)), undefined],
  ["a ttl of a minute on a sign-off", send("lead", signoff(), mate, ttl(60n)), undefined],
  ["a ttl on an assignment", send("ann", assign(), lead, ttl(60n)), by("size-shape", "ttl")],
  [
    "a ttl on a claim answer",
    send("ann", claimAnswer(true), lead, ttl(60n)),
    by("size-shape", "ttl"),
  ],
  ["getting a task", call(M.getTask, GetTaskRequestSchema, { taskId: "t1" }), undefined],
  ["getting no task id", call(M.getTask, GetTaskRequestSchema, {}), by("size-shape", "task_id")],
  [
    "listing tasks of a bad owner name",
    call(M.listTasks, ListTasksRequestSchema, { owner: "Ann" }),
    by("size-shape", "owner"),
  ],
  [
    "listing tasks by an unknown state",
    call(M.listTasks, ListTasksRequestSchema, { state: 9 as TaskState }),
    by("size-shape", "state"),
  ],
  [
    "listing done tasks of ann",
    call(M.listTasks, ListTasksRequestSchema, { owner: "ann", state: TaskState.DONE }),
    undefined,
  ],
  // the task list: shapes
  [
    "listing ready tasks",
    call(M.listTasks, ListTasksRequestSchema, { ready: true, status: TaskProgress.PENDING }),
    undefined,
  ],
  [
    "listing tasks both ready and blocked",
    call(M.listTasks, ListTasksRequestSchema, { ready: true, blocked: true }),
    by("size-shape", "blocked"),
  ],
  [
    "listing tasks by an unknown status",
    call(M.listTasks, ListTasksRequestSchema, { status: 9 as TaskProgress }),
    by("size-shape", "status"),
  ],
  [
    "a teammate creates a task with a server id",
    call(M.createTask, CreateTaskRequestSchema, { subject: "Write it", blockedBy: ["1"] }),
    undefined,
  ],
  [
    "creating a task without a subject",
    call(M.createTask, CreateTaskRequestSchema, { subject: "  " }),
    by("size-shape", "subject"),
  ],
  [
    "creating a task with a 201-character subject",
    call(M.createTask, CreateTaskRequestSchema, { subject: "s".repeat(201) }),
    by("size-shape", "subject"),
  ],
  [
    "creating a task with a two-line subject",
    call(M.createTask, CreateTaskRequestSchema, { subject: "one\ntwo" }),
    by("size-shape", "subject"),
  ],
  [
    "creating a task with a description over 16 KiB",
    call(M.createTask, CreateTaskRequestSchema, {
      subject: "s",
      description: "d".repeat(MAX_NOTE_BYTES + 1),
    }),
    by("size-shape", "description"),
  ],
  [
    "creating a task with a 201-character active form",
    call(M.createTask, CreateTaskRequestSchema, { subject: "s", activeForm: "a".repeat(201) }),
    by("size-shape", "active_form"),
  ],
  [
    "creating a task with a control character in its id",
    call(M.createTask, CreateTaskRequestSchema, { taskId: "a\u0007", subject: "s" }),
    by("size-shape", "task_id"),
  ],
  [
    "creating a task waiting on a blank id",
    call(M.createTask, CreateTaskRequestSchema, { subject: "s", blockedBy: [" "] }),
    by("size-shape", "blocked_by"),
  ],
  [
    "creating a task waiting on 101 tasks",
    call(M.createTask, CreateTaskRequestSchema, {
      subject: "s",
      blockedBy: Array.from({ length: 101 }, (_, i) => `t${i}`),
    }),
    by("size-shape", "blocked_by"),
  ],
  [
    "an update that changes nothing",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1" }),
    by("size-shape"),
  ],
  [
    "an update of no task id",
    call(M.updateTask, UpdateTaskRequestSchema, { subject: "s" }),
    by("size-shape", "task_id"),
  ],
  [
    "an update to an empty subject",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", subject: "" }),
    by("size-shape", "subject"),
  ],
  [
    "an update by an unknown status",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", status: 9 as TaskProgress }),
    by("size-shape", "status"),
  ],
  [
    "a deletion by update with another change",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.DELETED, subject: "s" },
      lead,
    ),
    by("size-shape", "status"),
  ],
  [
    "an update naming 101 dependencies in all",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      {
        taskId: "t1",
        addBlockedBy: Array.from({ length: 60 }, (_, i) => `a${i}`),
        removeBlocks: Array.from({ length: 41 }, (_, i) => `r${i}`),
      },
      lead,
    ),
    by("size-shape", "add_blocked_by"),
  ],
  [
    "deleting no task id",
    call(M.deleteTask, DeleteTaskRequestSchema, {}, lead),
    by("size-shape", "task_id"),
  ],
  [
    "a teammate reports a task ready",
    send("lead", task({ status: TaskStatus.READY })),
    by("size-shape", "message.task_notification.status"),
  ],
  // the task list: who changes what
  [
    "the owner starts its task",
    call(M.updateTask, UpdateTaskRequestSchema, {
      taskId: "t1",
      status: TaskProgress.IN_PROGRESS,
      activeForm: "Working",
    }),
    undefined,
  ],
  // Each pair of changed fields counts as changes, not as nothing to change.
  [
    "a teammate renames and redescribes a task",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", subject: "s", description: "d" }),
    undefined,
  ],
  [
    "a teammate redescribes a task and says what it is doing",
    call(M.updateTask, UpdateTaskRequestSchema, {
      taskId: "t1",
      description: "d",
      activeForm: "Doing",
    }),
    undefined,
  ],
  [
    "the lead sets a task's active form and what it waits on",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", activeForm: "Doing", addBlockedBy: ["t0"] },
      lead,
    ),
    undefined,
  ],
  [
    "a teammate marks a task completed",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", status: TaskProgress.COMPLETED }),
    by("signoff-completes", "status"),
  ],
  [
    "the lead marks a task completed",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.COMPLETED },
      lead,
    ),
    by("signoff-completes", "status"),
  ],
  [
    "the lead puts a task in review",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.IN_REVIEW },
      lead,
    ),
    by("signoff-completes", "status"),
  ],
  [
    "the lead changes what a task waits on",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", addBlockedBy: ["t0"], removeBlocks: ["t2"] },
      lead,
    ),
    undefined,
  ],
  [
    "a teammate adds a dependency",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", addBlockedBy: ["t0"] }),
    by("owner-or-lead-updates"),
  ],
  [
    "a teammate makes its task block another",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", addBlocks: ["t2"] }),
    by("owner-or-lead-updates"),
  ],
  [
    "a teammate removes what its task waits on",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", removeBlockedBy: ["t0"] }),
    by("owner-or-lead-updates"),
  ],
  // A status filter is not a status change: signoff-completes is about UpdateTask only.
  [
    "listing the completed tasks",
    call(M.listTasks, ListTasksRequestSchema, { status: TaskProgress.COMPLETED }),
    undefined,
  ],
  [
    "listing the tasks in review",
    call(M.listTasks, ListTasksRequestSchema, { status: TaskProgress.IN_REVIEW }),
    undefined,
  ],
  [
    "a teammate removes what its task blocks",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", removeBlocks: ["t2"] }),
    by("owner-or-lead-updates"),
  ],
  [
    "a teammate deletes a task by update",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", status: TaskProgress.DELETED }),
    by("owner-or-lead-updates", "status"),
  ],
  [
    "a teammate deletes a task",
    call(M.deleteTask, DeleteTaskRequestSchema, { taskId: "t1" }),
    by("owner-or-lead-updates"),
  ],
  [
    "the lead deletes a task",
    call(M.deleteTask, DeleteTaskRequestSchema, { taskId: "t1" }, lead),
    undefined,
  ],
  [
    "the lead deletes a task by update",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.DELETED },
      lead,
    ),
    undefined,
  ],
  [
    "the lead starts a task",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.IN_PROGRESS },
      lead,
    ),
    by("owner-or-lead-updates", "status"),
  ],
  [
    "the lead sets a task back to pending",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.PENDING },
      lead,
    ),
    by("owner-or-lead-updates", "status"),
  ],
  [
    "an observer creates a task",
    call(M.createTask, CreateTaskRequestSchema, { subject: "s" }, eye),
    by("observer-read-only"),
  ],
  [
    "an observer updates a task",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", subject: "s" }, eye),
    by("observer-read-only"),
  ],
  ["a claim broadcast", send("*", claim()), by("no-broadcast", "to")],
  ["an assignment broadcast", send("*", assign(), lead), by("no-broadcast", "to")],
  // task claim and assignment
  ["a teammate claims a task from the lead", send("lead", claim()), undefined],
  [
    "a teammate claims a task from another teammate",
    send("bob", claim()),
    by("claim-to-lead", "to"),
  ],
  ["the lead claims a task from itself", send("lead", claim(), lead), by("claim-to-lead", "to")],
  ["the lead approves a claim", send("ann", claimAnswer(true), lead), undefined],
  ["a teammate approves a claim", send("bob", claimAnswer(true)), by("lead-only-assign")],
  [
    "a teammate rejects a claim without a reason",
    send("bob", claimAnswer(false)),
    by("lead-only-assign"),
  ],
  ["the lead assigns a task to a teammate", send("ann", assign(), lead), undefined],
  ["a teammate assigns a task", send("bob", assign()), by("lead-only-assign")],
  [
    "the lead assigns a task to itself",
    send("lead", assign(), lead),
    by("assign-to-teammate", "to"),
  ],
  [
    "the lead rejects a claim without a reason",
    send("ann", claimAnswer(false, " "), lead),
    by("reason-on-reject", "message.task_claim_response.reason"),
  ],
  [
    "the lead rejects a claim with a reason",
    send("ann", claimAnswer(false, "bob has it"), lead),
    undefined,
  ],
  // task handoff
  ["an owner hands a task to a teammate", send("bob", handoff()), undefined],
  ["an owner gives a task back to the lead", send("lead", handoff()), undefined],
  ["a teammate hands a task to itself", send("ann", handoff()), by("handoff-to-other", "to")],
  [
    "a teammate declines a handoff without a reason",
    send("bob", handoffAnswer(false)),
    by("reason-on-reject", "message.task_handoff_response.reason"),
  ],
  [
    "a teammate declines a handoff with a reason",
    send("bob", handoffAnswer(false, "busy")),
    undefined,
  ],
  ["a teammate accepts a handoff, no reason needed", send("bob", handoffAnswer(true)), undefined],
  // result sign-off
  ["an owner asks the lead to sign off", send("lead", signoff()), undefined],
  ["an owner asks a teammate to sign off", send("bob", signoff()), by("signoff-to-lead", "to")],
  ["the lead asks itself to sign off", send("lead", signoff(), lead), by("signoff-to-lead", "to")],
  ["the lead signs off a result", send("ann", signoffAnswer(true), lead), undefined],
  ["a teammate signs off a result", send("bob", signoffAnswer(true)), by("lead-only-signoff")],
  [
    "the lead rejects a result without feedback",
    send("ann", signoffAnswer(false, "\n"), lead),
    by("feedback-on-reject", "message.result_signoff_response.feedback"),
  ],
  [
    "the lead rejects a result with feedback",
    send("ann", signoffAnswer(false, "add tests"), lead),
    undefined,
  ],
  ["an observer lists tasks", call(M.listTasks, ListTasksRequestSchema, {}, eye), undefined],
  [
    "an observer gets a task",
    call(M.getTask, GetTaskRequestSchema, { taskId: "t1" }, eye),
    undefined,
  ],
  ["an observer claims a task", send("lead", claim(), eye), by("observer-read-only")],
  // observers read, and only read; the team's feed is the lead's and the observers'
  [
    "an observer lists the members",
    call(M.listMembers, ListMembersRequestSchema, {}, eye),
    undefined,
  ],
  [
    "an observer lists requests",
    call(M.listRequests, ListRequestsRequestSchema, {}, eye),
    undefined,
  ],
  [
    "an observer gets a request",
    call(M.getRequest, GetRequestRequestSchema, { requestId: REQ }, eye),
    undefined,
  ],
  [
    "an observer awaits a request",
    call(M.awaitRequest, AwaitRequestRequestSchema, { requestId: REQ }, eye),
    undefined,
  ],
  [
    "an observer lists attempts",
    call(M.listAttempts, ListAttemptsRequestSchema, {}, eye),
    undefined,
  ],
  ["an observer watches the team", call(M.watchTeam, WatchTeamRequestSchema, {}, eye), undefined],
  ["the lead watches the team", call(M.watchTeam, WatchTeamRequestSchema, {}, lead), undefined],
  [
    "a teammate watches the team",
    call(M.watchTeam, WatchTeamRequestSchema, {}, mate),
    by("watch-lead-or-observer"),
  ],
  ["an observer exports the team", call(M.exportTeam, ExportTeamRequestSchema, {}, eye), undefined],
  ["the lead exports the team", call(M.exportTeam, ExportTeamRequestSchema, {}, lead), undefined],
  [
    "a teammate exports the team",
    call(M.exportTeam, ExportTeamRequestSchema, {}, mate),
    by("export-lead-or-observer"),
  ],
  [
    "importing a bundle under the name it holds",
    call(M.importTeam, ImportTeamRequestSchema, { chunk: new Uint8Array([1]) }),
    undefined,
  ],
  [
    "importing a bundle as team demo-2",
    call(M.importTeam, ImportTeamRequestSchema, { team: "demo-2" }),
    undefined,
  ],
  [
    "importing a bundle under an upper-case name",
    call(M.importTeam, ImportTeamRequestSchema, { team: "Demo" }),
    by("size-shape", "team"),
  ],
  [
    "importing with a public key of 4096 characters",
    call(M.importTeam, ImportTeamRequestSchema, { publicKey: "k".repeat(4096) }),
    undefined,
  ],
  [
    "importing with a public key of 4097 characters",
    call(M.importTeam, ImportTeamRequestSchema, { publicKey: "k".repeat(4097) }),
    by("size-shape", "public_key"),
  ],
  ["an observer sends text", send("lead", text("hi"), eye), by("observer-read-only")],
  ["an observer asks for a shutdown", send("ann", shutdown(), eye), by("observer-read-only")],
  [
    "an observer cancels a request",
    call(M.cancelRequest, CancelRequestRequestSchema, { requestId: REQ }, eye),
    by("observer-read-only"),
  ],
  [
    "an observer adds a member",
    call(M.addMember, AddMemberRequestSchema, { name: "x" }, eye),
    by("observer-read-only"),
  ],
  [
    "an observer removes a member",
    call(M.removeMember, RemoveMemberRequestSchema, { name: "ann" }, eye),
    by("observer-read-only"),
  ],
  ["an observer acks", call(M.ack, AckRequestSchema, { seq: 0n }, eye), by("observer-read-only")],
  [
    "an observer reads an inbox",
    call(M.readInbox, ReadInboxRequestSchema, {}, eye),
    by("observer-read-only"),
  ],
  [
    "an observer subscribes",
    call(M.subscribe, SubscribeRequestSchema, {}, eye),
    by("observer-read-only"),
  ],
  // permission prompts
  ["a teammate asks the lead for permission", send("lead", permission()), undefined],
  ["a permission request with a ttl", send("lead", permission(), mate, ttl(60n)), undefined],
  [
    "a permission request to another teammate",
    send("bob", permission()),
    by("permission-to-lead", "to"),
  ],
  [
    "a permission request from the lead",
    send("lead", permission(), lead),
    by("permission-to-lead", "to"),
  ],
  ["a permission request broadcast", send("*", permission()), by("no-broadcast", "to")],
  [
    "a permission request without a tool name",
    send("lead", permission(" ")),
    by("size-shape", "message.permission_request.tool_name"),
  ],
  [
    "a permission request without the runtime's id",
    send("lead", permission("Bash", "")),
    by("size-shape", "message.permission_request.runtime_request_id"),
  ],
  [
    "a permission request with a 65-character runtime id",
    send("lead", permission("Bash", "a".repeat(65))),
    by("size-shape", "message.permission_request.runtime_request_id"),
  ],
  ["the lead allows", send("ann", permissionAnswer(true), lead), undefined],
  [
    "the lead denies with a reason",
    send("ann", permissionAnswer(false, "not on main"), lead),
    undefined,
  ],
  [
    "the lead denies without a reason",
    send("ann", permissionAnswer(false, " "), lead),
    by("reason-on-reject", "message.permission_response.reason"),
  ],
  ["a teammate allows", send("bob", permissionAnswer(true)), by("lead-only-approval")],
  [
    "a permission answer without its request id",
    send("ann", permissionAnswer(true, "", ""), lead),
    by("size-shape", "message.permission_response.request_id"),
  ],
  [
    "a permission answer broadcast",
    send("*", permissionAnswer(true), lead),
    by("no-broadcast", "to"),
  ],
  // the approver
  ["an approver approves a plan", send("ann", planAnswer(true), judge), undefined],
  ["an approver allows a tool use", send("ann", permissionAnswer(true), judge), undefined],
  [
    "an approver denies a tool use without a reason",
    send("ann", permissionAnswer(false), judge),
    by("reason-on-reject", "message.permission_response.reason"),
  ],
  ["an approver approves a claim", send("ann", claimAnswer(true), judge), undefined],
  ["an approver signs off a result", send("ann", signoffAnswer(true), judge), undefined],
  ["an approver sends text", send("ann", text("on it"), judge), undefined],
  [
    "an approver lists requests",
    call(M.listRequests, ListRequestsRequestSchema, {}, judge),
    undefined,
  ],
  ["an approver reads its inbox", call(M.readInbox, ReadInboxRequestSchema, {}, judge), undefined],
  [
    "an approver asks for a shutdown",
    send("ann", shutdown(), judge),
    by("approver-acts-for-lead", "message"),
  ],
  [
    "an approver assigns a task",
    send("ann", assign(), judge),
    by("approver-acts-for-lead", "message"),
  ],
  [
    "an approver answers a handoff",
    send("ann", handoffAnswer(true), judge),
    by("approver-acts-for-lead", "message"),
  ],
  [
    "an approver submits a plan",
    send("lead", plan(), judge),
    by("approver-acts-for-lead", "message"),
  ],
  [
    "an approver adds a member",
    call(M.addMember, AddMemberRequestSchema, { name: "x" }, judge),
    by("approver-acts-for-lead"),
  ],
  [
    "an approver removes a member",
    call(M.removeMember, RemoveMemberRequestSchema, { name: "ann" }, judge),
    by("approver-acts-for-lead"),
  ],
  [
    "an approver watches the team",
    call(M.watchTeam, WatchTeamRequestSchema, {}, judge),
    by("approver-acts-for-lead"),
  ],
  [
    "an approver cancels a request",
    call(M.cancelRequest, CancelRequestRequestSchema, { requestId: REQ }, judge),
    by("approver-acts-for-lead"),
  ],
  // size-shape: every sized field at its limit (passes) and past it (refused under its own
  // field), and the boundaries of ttl, cursors and ids
  [
    "deleting a team by an upper-case name",
    call(M.deleteTeam, DeleteTeamRequestSchema, { team: "Demo" }, lead),
    by("size-shape", "team"),
  ],
  [
    "deleting team demo",
    call(M.deleteTeam, DeleteTeamRequestSchema, { team: "demo" }, lead),
    undefined,
  ],
  ["rotating one's own token", call(M.rotateToken, RotateTokenRequestSchema, {}), undefined],
  [
    "rotating ann's token",
    call(M.rotateToken, RotateTokenRequestSchema, { member: "ann" }, lead),
    undefined,
  ],
  [
    "rotating the token of a bad name",
    call(M.rotateToken, RotateTokenRequestSchema, { member: "Ann" }, lead),
    by("size-shape", "member"),
  ],
  [
    "a 100-character member name",
    call(M.addMember, AddMemberRequestSchema, { name: "n".repeat(100) }, lead),
    by("size-shape", "name"),
  ],
  ["read after seq 5", call(M.readInbox, ReadInboxRequestSchema, { afterSeq: 5n }), undefined],
  [
    "subscribe after the largest seq",
    call(M.subscribe, SubscribeRequestSchema, { afterSeq: MAX_SEQ }),
    undefined,
  ],
  [
    "a message_id at the limit",
    send("bob", text("hi"), mate, { messageId: "m".repeat(MAX_MESSAGE_ID_CHARS) }),
    undefined,
  ],
  ["a printable message_id", send("bob", text("hi"), mate, { messageId: "retry-1" }), undefined],
  ["the shortest ttl", send("ann", shutdown(), lead, ttl(BigInt(MIN_TTL_MS / 1000))), undefined],
  [
    "a ttl of one and a half seconds",
    send("ann", shutdown(), lead, { ttl: { seconds: 1n, nanos: 500_000_000 } }),
    undefined,
  ],
  [
    "a ttl a millisecond short of the shortest",
    send("ann", shutdown(), lead, { ttl: { seconds: 0n, nanos: 999_000_000 } }),
    by("size-shape", "ttl"),
  ],
  ["the longest ttl", send("lead", plan(), mate, ttl(BigInt(MAX_TTL_MS / 1000))), undefined],
  [
    "a ttl half a second short of the longest",
    send("lead", plan(), mate, {
      ttl: { seconds: BigInt(MAX_TTL_MS / 1000) - 1n, nanos: 500_000_000 },
    }),
    undefined,
  ],
  [
    "a ttl a second past the longest",
    send("lead", plan(), mate, ttl(BigInt(MAX_TTL_MS / 1000) + 1n)),
    by("size-shape", "ttl"),
  ],
  [
    "awaiting with a negative timeout",
    call(M.awaitRequest, AwaitRequestRequestSchema, {
      requestId: REQ,
      timeout: { seconds: -1n, nanos: 0 },
    }),
    by("size-shape", "timeout"),
  ],
  [
    "awaiting with negative nanoseconds",
    call(M.awaitRequest, AwaitRequestRequestSchema, {
      requestId: REQ,
      timeout: { seconds: 0n, nanos: -1 },
    }),
    by("size-shape", "timeout"),
  ],
  [
    "awaiting with a zero timeout",
    call(M.awaitRequest, AwaitRequestRequestSchema, { requestId: REQ, timeout: {} }),
    undefined,
  ],
  [
    "awaiting five seconds",
    call(M.awaitRequest, AwaitRequestRequestSchema, { requestId: REQ, timeout: { seconds: 5n } }),
    undefined,
  ],
  [
    "listing ann's attempts about a 129-character id",
    call(
      M.listAttempts,
      ListAttemptsRequestSchema,
      { member: "ann", requestId: "r".repeat(129) },
      lead,
    ),
    by("size-shape", "request_id"),
  ],
  [
    "listing attempts about a 128-character id",
    call(M.listAttempts, ListAttemptsRequestSchema, { requestId: "r".repeat(128) }, lead),
    undefined,
  ],
  [
    "listing attempts about an id with a control character",
    call(M.listAttempts, ListAttemptsRequestSchema, { requestId: "r\u0001" }, lead),
    by("size-shape", "request_id"),
  ],
  [
    "listing attempts of a bad member name",
    call(M.listAttempts, ListAttemptsRequestSchema, { member: "Ann" }, lead),
    by("size-shape", "member"),
  ],
  // the message kinds: each sized field past its limit, under its own field
  [
    "a shutdown answer's reason over the limit",
    send("lead", shutdownAnswer(false, "r".repeat(MAX_NOTE_BYTES + 1))),
    by("size-shape", "message.shutdown_response.reason"),
  ],
  [
    "a plan answer's feedback over the limit",
    send("ann", planAnswer(false, "f".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.plan_approval_response.feedback"),
  ],
  [
    "a claim answer's reason over the limit",
    send("ann", claimAnswer(false, "r".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.task_claim_response.reason"),
  ],
  [
    "a handoff answer's reason over the limit",
    send("ann", handoffAnswer(false, "r".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.task_handoff_response.reason"),
  ],
  [
    "a sign-off answer's feedback over the limit",
    send("ann", signoffAnswer(false, "f".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.result_signoff_response.feedback"),
  ],
  [
    "a permission answer's reason over the limit",
    send("ann", permissionAnswer(false, "r".repeat(MAX_NOTE_BYTES + 1)), lead),
    by("size-shape", "message.permission_response.reason"),
  ],
  [
    "a sign-off request for a blank task id",
    send("lead", signoff("done", " ")),
    by("size-shape", "message.result_signoff_request.task_id"),
  ],
  [
    "a sign-off request with a summary over the limit",
    send("lead", {
      case: "resultSignoffRequest",
      value: { taskId: "t1", result: "done", summary: "s".repeat(MAX_NOTE_BYTES + 1) },
    }),
    by("size-shape", "message.result_signoff_request.summary"),
  ],
  [
    "a permission request with a 64-character runtime id",
    send("lead", permission("Bash", "a".repeat(64))),
    undefined,
  ],
  [
    "a permission request with a 1-character runtime id",
    send("lead", permission("Bash", "a")),
    undefined,
  ],
  [
    "a permission request with a 257-byte tool name",
    send("lead", permission("t".repeat(257))),
    by("size-shape", "message.permission_request.tool_name"),
  ],
  [
    "a permission request with a description over the limit",
    send("lead", {
      case: "permissionRequest",
      value: {
        toolName: "Bash",
        description: "d".repeat(MAX_NOTE_BYTES + 1),
        runtimeRequestId: "a",
      },
    }),
    by("size-shape", "message.permission_request.description"),
  ],
  [
    "a permission request with an input preview over the limit",
    send("lead", {
      case: "permissionRequest",
      value: {
        toolName: "Bash",
        inputPreview: "i".repeat(MAX_NOTE_BYTES + 1),
        runtimeRequestId: "a",
      },
    }),
    by("size-shape", "message.permission_request.input_preview"),
  ],
  [
    "a task notification with a 257-byte task id",
    send("lead", task({ taskId: "t".repeat(257) })),
    by("size-shape", "message.task_notification.task_id"),
  ],
  [
    "a task notification with a description over the limit",
    send("lead", task({ description: "d".repeat(MAX_NOTE_BYTES + 1) })),
    by("size-shape", "message.task_notification.description"),
  ],
  [
    "a task notification with a summary over the limit",
    send("lead", task({ summary: "s".repeat(MAX_NOTE_BYTES + 1) })),
    by("size-shape", "message.task_notification.summary"),
  ],
  [
    "a failed task's error over the limit",
    send("lead", task({ status: TaskStatus.FAILED, error: "e".repeat(MAX_NOTE_BYTES + 1) })),
    by("size-shape", "message.task_notification.error"),
  ],
  // the task list: each line and list at its limit and past it
  [
    "creating a task with a 200-character subject",
    call(M.createTask, CreateTaskRequestSchema, { subject: "s".repeat(MAX_TASK_LINE_CHARS) }),
    undefined,
  ],
  [
    "creating a task whose subject is 200 characters and a trailing space",
    call(M.createTask, CreateTaskRequestSchema, { subject: `${"s".repeat(MAX_TASK_LINE_CHARS)} ` }),
    undefined,
  ],
  [
    "creating a task whose subject ends in a line break",
    call(M.createTask, CreateTaskRequestSchema, { subject: "Write it\n" }),
    undefined,
  ],
  [
    "creating a task with a description of 16 KiB",
    call(M.createTask, CreateTaskRequestSchema, {
      subject: "s",
      description: "d".repeat(MAX_NOTE_BYTES),
    }),
    undefined,
  ],
  [
    "creating a task with a NUL in its description",
    call(M.createTask, CreateTaskRequestSchema, { subject: "s", description: "a\u0000b" }),
    by("size-shape", "description"),
  ],
  [
    "creating a task waiting on 100 tasks",
    call(M.createTask, CreateTaskRequestSchema, {
      subject: "s",
      blockedBy: Array.from({ length: MAX_DEPENDENCIES_PER_CALL }, (_, i) => `t${i}`),
    }),
    undefined,
  ],
  [
    "an update to a description over the limit",
    call(M.updateTask, UpdateTaskRequestSchema, {
      taskId: "t1",
      description: "d".repeat(MAX_NOTE_BYTES + 1),
    }),
    by("size-shape", "description"),
  ],
  [
    "an update to a 201-character active form",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", activeForm: "a".repeat(201) }),
    by("size-shape", "active_form"),
  ],
  [
    "an update that clears the active form",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", activeForm: "" }),
    undefined,
  ],
  [
    "an update of the description alone",
    call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", description: "more" }),
    undefined,
  ],
  [
    "a deletion by update with a new description",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.DELETED, description: "d" },
      lead,
    ),
    by("size-shape", "status"),
  ],
  [
    "a deletion by update with a new active form",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.DELETED, activeForm: "a" },
      lead,
    ),
    by("size-shape", "status"),
  ],
  [
    "a deletion by update with a new subject and description",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.DELETED, subject: "s", description: "d" },
      lead,
    ),
    by("size-shape", "status"),
  ],
  [
    "a deletion by update with a new description and active form",
    call(
      M.updateTask,
      UpdateTaskRequestSchema,
      { taskId: "t1", status: TaskProgress.DELETED, description: "d", activeForm: "a" },
      lead,
    ),
    by("size-shape", "status"),
  ],
  [
    "listing ann's tasks both ready and blocked",
    call(M.listTasks, ListTasksRequestSchema, { owner: "ann", ready: true, blocked: true }),
    by("size-shape", "blocked"),
  ],
  // leases: the shapes a query may trust
  [
    "acquiring a lease",
    call(M.acquireLease, AcquireLeaseRequestSchema, { resource: "src/**", reason: "r" }),
    undefined,
  ],
  [
    "acquiring a lease with a NUL in the reason",
    call(M.acquireLease, AcquireLeaseRequestSchema, { resource: "src/**", reason: "a\u0000" }),
    by("size-shape", "reason"),
  ],
  [
    "acquiring a lease with a reason over the limit",
    call(M.acquireLease, AcquireLeaseRequestSchema, {
      resource: "src/**",
      reason: "r".repeat(MAX_NOTE_BYTES + 1),
    }),
    by("size-shape", "reason"),
  ],
  [
    "acquiring a lease with a reason at the limit",
    call(M.acquireLease, AcquireLeaseRequestSchema, {
      resource: "src/**",
      reason: "r".repeat(MAX_NOTE_BYTES),
    }),
    undefined,
  ],
  [
    "renewing a lease",
    call(M.renewLease, RenewLeaseRequestSchema, { leaseId: "l".repeat(128) }),
    undefined,
  ],
  [
    "renewing a 129-character lease id",
    call(M.renewLease, RenewLeaseRequestSchema, { leaseId: "l".repeat(129) }),
    by("size-shape", "lease_id"),
  ],
  [
    "renewing a lease id with a control character",
    call(M.renewLease, RenewLeaseRequestSchema, { leaseId: "l\u0001" }),
    by("size-shape", "lease_id"),
  ],
  [
    "releasing a lease with a NUL in the reason",
    call(M.releaseLease, ReleaseLeaseRequestSchema, { leaseId: "l1", reason: "a\u0000" }),
    by("size-shape", "reason"),
  ],
  [
    "releasing a malformed lease id",
    call(M.releaseLease, ReleaseLeaseRequestSchema, { leaseId: "l\u0001" }),
    by("size-shape", "lease_id"),
  ],
  [
    "releasing a lease",
    call(M.releaseLease, ReleaseLeaseRequestSchema, { leaseId: "l1", reason: "done" }),
    undefined,
  ],
  ["listing every lease", call(M.listLeases, ListLeasesRequestSchema, {}), undefined],
  [
    "listing leases of a bad holder name",
    call(M.listLeases, ListLeasesRequestSchema, { holder: "Ann" }),
    by("size-shape", "holder"),
  ],
  [
    "listing ann's leases on a 1025-character resource",
    call(M.listLeases, ListLeasesRequestSchema, { holder: "ann", resource: "r".repeat(1025) }),
    by("size-shape", "resource"),
  ],
  [
    "listing leases on a 1024-character resource",
    call(M.listLeases, ListLeasesRequestSchema, { resource: "r".repeat(1024) }),
    undefined,
  ],
  [
    "listing leases on a resource with a line break",
    call(M.listLeases, ListLeasesRequestSchema, { resource: "a\nb" }),
    by("size-shape", "resource"),
  ],
  [
    "listing ann's leases on src",
    call(M.listLeases, ListLeasesRequestSchema, { holder: "ann", resource: "src/**" }),
    undefined,
  ],
  [
    "reading a thread without its id",
    call(M.getThread, GetThreadRequestSchema, {}),
    by("size-shape", "thread_id"),
  ],
  [
    "reading a thread by a 129-character id",
    call(M.getThread, GetThreadRequestSchema, { threadId: "t".repeat(129) }),
    by("size-shape", "thread_id"),
  ],
  [
    "reading a thread by an id with a NUL",
    call(M.getThread, GetThreadRequestSchema, { threadId: "t\u0000" }),
    by("size-shape", "thread_id"),
  ],
  [
    "reading a thread by a 128-character id",
    call(M.getThread, GetThreadRequestSchema, { threadId: "t".repeat(128) }),
    undefined,
  ],
  [
    "replying to an id with a control character",
    send("bob", text("x"), mate, { replyTo: "e\u0001" }),
    by("size-shape", "reply_to"),
  ],
  [
    "replying to a 129-character id",
    send("bob", text("x"), mate, { replyTo: "e".repeat(129) }),
    by("size-shape", "reply_to"),
  ],
  ["replying to a message", send("bob", text("x"), mate, { replyTo: "e".repeat(128) }), undefined],
  [
    "searching for nothing",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: " " }),
    by("size-shape", "query"),
  ],
  [
    "searching with a 1025-byte query",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: `${"é".repeat(512)}x` }),
    by("size-shape", "query"),
  ],
  [
    "searching with a 1024-byte query",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: "é".repeat(512) }),
    undefined,
  ],
  [
    "searching with a NUL in the query",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: "a\u0000b" }),
    by("size-shape", "query"),
  ],
  [
    "searching from a bad name",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: "x", from: "Ann" }),
    by("size-shape", "from"),
  ],
  [
    "searching to a bad name",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: "x", to: "A B" }),
    by("size-shape", "to"),
  ],
  [
    "searching a kind with a control character",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: "x", kind: "te\u0001xt" }),
    by("size-shape", "kind"),
  ],
  [
    "searching a 65-character kind",
    call(M.searchMessages, SearchMessagesRequestSchema, { query: "x", kind: "k".repeat(65) }),
    by("size-shape", "kind"),
  ],
  [
    "searching from a good name, of a 65-character kind",
    call(M.searchMessages, SearchMessagesRequestSchema, {
      query: "x",
      from: "ann",
      kind: "k".repeat(65),
    }),
    by("size-shape", "kind"),
  ],
  [
    "searching to a good name, of a kind with a control character",
    call(M.searchMessages, SearchMessagesRequestSchema, {
      query: "x",
      to: "bob",
      kind: "te\u0001xt",
    }),
    by("size-shape", "kind"),
  ],
  [
    "searching broadcasts from ann of kind text",
    call(M.searchMessages, SearchMessagesRequestSchema, {
      query: '"parser bug" -flaky or lexer',
      from: "ann",
      to: "*",
      kind: "k".repeat(64),
    }),
    undefined,
  ],
];

describe("the rules table, called directly", () => {
  it.each(rows)("%s", (_, c, expected) => {
    expect(refusal(c)).toEqual(expected);
  });

  it("refuses under every rule of the table in at least one row", () => {
    const refused = new Set(rows.map(([, , e]) => e?.rule).filter((r) => r !== undefined));
    expect([...refused].sort()).toEqual(rules.map((r) => r.id).sort());
  });

  // A row refused under rule R must be refused BY R: without R in the table, the call is no
  // longer refused under R (it passes, or a later rule speaks). So no row passes by accident
  // of an earlier rule, and every rule's check is needed by its rows.
  it.each(rows.filter(([, , e]) => e !== undefined))(
    "%s: the refusal is the rule's own",
    (_, c, expected) => {
      const without = rules.filter((r) => r.id !== expected?.rule);
      expect(refusal(c, without)?.rule).not.toBe(expected?.rule);
    },
  );

  // Every structured kind, with a body valid for shape: a new kind of Message fails the
  // completeness check below until it is listed here, so no-broadcast covers it from day one.
  const structured: Record<string, Kind> = {
    shutdownRequest: shutdown("done"),
    shutdownResponse: shutdownAnswer(true),
    planApprovalRequest: plan(),
    planApprovalResponse: planAnswer(true),
    taskNotification: task({}),
    taskClaimRequest: claim(),
    taskClaimResponse: claimAnswer(true),
    taskAssign: assign(),
    taskHandoffRequest: handoff(),
    taskHandoffResponse: handoffAnswer(true),
    resultSignoffRequest: signoff(),
    resultSignoffResponse: signoffAnswer(true),
    permissionRequest: permission(),
    permissionResponse: permissionAnswer(true),
  };

  it("lists every kind of Message but text and the server's request_update as structured", () => {
    const kinds = MessageSchema.oneofs
      .find((o) => o.name === "kind")
      ?.fields.map((f) => f.localName);
    expect(Object.keys(structured).sort()).toEqual(
      kinds?.filter((k) => k !== "text" && k !== "requestUpdate").sort(),
    );
  });

  it.each(Object.keys(structured))(
    'refuses a %s to "*" under no-broadcast (field to), from the lead and from a teammate',
    (kind) => {
      const body = structured[kind] as Kind;
      expect([refusal(send("*", body, lead)), refusal(send("*", body, mate))]).toEqual([
        by("no-broadcast", "to"),
        by("no-broadcast", "to"),
      ]);
    },
  );

  // Each refusal says what is wrong in a sentence of its own, and carries the code
  // docs/protocols.md's rules table gives its rule.
  it.each(rows.filter(([, , e]) => e !== undefined))(
    "%s: the refusal has a sentence and its rule's documented code",
    (_, c) => {
      let err: RuleViolationError | undefined;
      try {
        checkRules(c);
      } catch (e) {
        if (e instanceof RuleViolationError) err = e;
      }
      expect(err?.sentence.trim()).not.toBe("");
      expect(err?.message).toBe(`${err?.rule}: ${err?.sentence}`);
      expect(err?.refusal).toBe(documentedCodes.get(err?.rule ?? ""));
    },
  );

  // CreateTeam comes with no caller; every rule reads the caller so that a call without one
  // is refused or passes, never crashes the table.
  // Each rule alone too: in the table an earlier rule may refuse such a call before a later
  // one reads the caller, but no rule may rely on that.
  it.each(rows)(
    "%s, with no caller: refused or passed by the table and by each rule alone, never a crash",
    (_, c) => {
      expect(() => refusal({ ...c, caller: undefined })).not.toThrow();
      for (const rule of rules) {
        expect(() => rule.check({ ...c, caller: undefined }), rule.id).not.toThrow();
      }
    },
  );

  /** The sentence a call is refused with. */
  const sentence = (c: RuleCall) => {
    try {
      checkRules(c);
    } catch (e) {
      if (e instanceof RuleViolationError) return e.sentence;
    }
    return undefined;
  };

  it("tells an observer it has no inbox on Subscribe, ReadInbox and Ack, and that it is read-only on a write", () => {
    const inboxCalls = [
      call(M.subscribe, SubscribeRequestSchema, {}, eye),
      call(M.readInbox, ReadInboxRequestSchema, {}, eye),
      call(M.ack, AckRequestSchema, { seq: 1n }, eye),
    ];
    for (const c of inboxCalls) {
      expect(sentence(c)).toBe(
        `an observer has no inbox (${c.method.name}): WatchTeam shows everything the team stores`,
      );
    }
    expect(sentence(send("ann", text("hi"), eye))).toBe(
      "an observer is read-only: Send is refused (it may ListMembers, ListRequests, " +
        "GetRequest, AwaitRequest, ListAttempts, WatchTeam, ExportTeam, GetTask, ListTasks, ListLeases, " +
        "GetThread, ListThreads, SearchMessages and RotateToken its own token)",
    );
  });

  it("says which lead-only task answer a teammate sent: an assignment, or a claim's answer", () => {
    expect(sentence(send("bob", assign()))).toMatch(/^only the team lead may assign tasks; /);
    expect(sentence(send("bob", claimAnswer(true)))).toBe(
      "only the team lead (or an approver on its behalf) may approve or reject task claims",
    );
  });

  it("says how a task becomes completed, or in review, when UpdateTask tries either", () => {
    const update = (status: TaskProgress) =>
      call(M.updateTask, UpdateTaskRequestSchema, { taskId: "t1", status });
    expect(sentence(update(TaskProgress.COMPLETED))).toMatch(
      /^a task is completed only by the lead's approval of its owner's result/,
    );
    expect(sentence(update(TaskProgress.IN_REVIEW))).toMatch(
      /^a task is in_review while its owner's result_signoff_request waits/,
    );
  });

  it("the interceptor checks each unary call's request and caller before the handler; streams check themselves", async () => {
    const reached: string[] = [];
    const next = (async (req: { method: { name: string } }) => {
      reached.push(req.method.name);
      return {};
    }) as never;
    const request = (c: RuleCall, stream: boolean) =>
      ({
        stream,
        method: c.method,
        message: c.request,
        contextValues: createContextValues().set(callerKey, c.caller),
      }) as never;
    const intercept = rulesInterceptor()(next);
    const broadcast = send("*", shutdown(), lead);
    await expect(intercept(request(broadcast, false))).rejects.toMatchObject({
      rule: "no-broadcast",
      field: "to",
    });
    expect(reached).toEqual([]);
    await intercept(request(send("ann", shutdown(), lead), false));
    // The caller comes from the context: the same shutdown by a teammate is refused.
    await expect(intercept(request(send("ann", shutdown(), mate), false))).rejects.toMatchObject({
      rule: "lead-only-shutdown",
    });
    await intercept(request(broadcast, true));
    expect(reached).toEqual(["Send", "Send"]);
  });

  // What an agent reads when it is refused: every row's sentence, pinned in a file a reviewer
  // reads top to bottom (a changed or emptied sentence fails here, and shows in review).
  it("says each refusal in the sentence written down in rules-table.sentences.txt", async () => {
    const lines = rows.flatMap(([title, c, expected]) => {
      if (expected === undefined) return [];
      try {
        checkRules(c);
      } catch (e) {
        if (e instanceof RuleViolationError) {
          return [`${title}\n  ${e.rule}${e.field ? ` (${e.field})` : ""}: ${e.sentence}`];
        }
      }
      return [`${title}\n  not refused`];
    });
    await expect(`${lines.join("\n")}\n`).toMatchFileSnapshot("rules-table.sentences.txt");
  });

  it("checks shape before who may send what: an oversized plan to a teammate is a shape error", () => {
    expect(refusal(send("bob", plan("p".repeat(MAX_PLAN_BYTES + 1))))?.rule).toBe("size-shape");
  });
});
