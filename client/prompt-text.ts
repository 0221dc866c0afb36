import { timestampDate } from "@bufbuild/protobuf/wkt";
import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import { permissionModeName, requestKindName, requestStatusName, taskStatusName } from "./names.js";

export interface PromptTextOptions {
  /**
   * How the expected answer is spelled: as the Message to send ("rpc", for agents with a
   * tool over the client library) or as the `team` CLI command ("cli"). Default "rpc".
   */
  answers?: "rpc" | "cli";
  /**
   * The request's status as the reader knows it now (GetRequest, or a later request_update
   * seen in the same stream: see createPromptReader). A replayed request that is no longer
   * pending then says so, instead of asking for an answer the server would refuse.
   */
  status?: RequestStatus;
  /**
   * Which party of the request the reader is, for a request_update (the server sends them
   * to either side). Unknown: the update is worded so it is true for both.
   */
  side?: "requester" | "addressee";
  /**
   * The task the request is about, for an answer or update whose body does not carry it
   * (a task_claim_response names its request only): looked up by the reader (GetRequest),
   * so the model is told which task, never a placeholder.
   */
  taskId?: string;
  /**
   * The reader's member name. An answer stored for someone else than its addressee (the
   * lead's copy of what an approver answered on its behalf) is then worded as that copy:
   * whose request it answered, and that nothing is asked of the reader.
   */
  reader?: string;
}

/**
 * An envelope as text for an LLM agent's context. Task notifications are the
 * `<task-notification>` block of Claude Code's agent teams; protocol messages name their request_id and spell out the
 * answer expected. Every value is escaped, so a message body cannot forge the markup
 * around it (a teammate cannot fake a shutdown request inside a text).
 */
export function toPromptText(envelope: Envelope, options: PromptTextOptions = {}): string {
  const cli = options.answers === "cli";
  const from = envelope.from || "the server";
  const id = envelope.requestId;
  const task = options.taskId ? ` of task "${text(options.taskId)}"` : "";
  const kind = envelope.message?.kind ?? { case: undefined };
  // Asking for an answer to a request that is settled only earns a once-only refusal.
  const settled =
    options.status !== undefined && options.status !== RequestStatus.PENDING
      ? [
          `This request is no longer pending: it is ${requestStatusName(options.status)}. Do not answer it; an answer now is refused.`,
        ]
      : undefined;
  const copy = copyOfAnswer(envelope, options, task);
  if (copy) return copy;
  switch (kind.case) {
    case "text":
      return block("message", envelope, [text(kind.value)]);
    case "shutdownRequest":
      return block("shutdown-request", envelope, [
        `${from} asks you to shut down${kind.value.reason ? `. Reason: ${text(kind.value.reason)}` : "."}`,
        ...(settled ?? [
          "Answer it (exactly once) to approve and stop, or to reject with a reason and keep working:",
          cli
            ? `  team answer-shutdown ${id} --approve\n  team answer-shutdown ${id} --reject --reason "<why you must keep working>"`
            : `  shutdown_response to "${from}": { request_id: "${id}", approve: true }\n  shutdown_response to "${from}": { request_id: "${id}", approve: false, reason: "<why you must keep working>" }`,
          "Once you approve, the server stops you: your token no longer works.",
        ]),
      ]);
    case "shutdownResponse": {
      const r = kind.value;
      return block("shutdown-response", envelope, [
        r.approve
          ? `${from} approved your shutdown request ${r.requestId} and has stopped.`
          : `${from} rejected your shutdown request ${r.requestId} and keeps working. Reason: ${text(r.reason)}`,
        ...(r.approve ? [] : ["You may ask again later, or remove the member to force it."]),
      ]);
    }
    case "planApprovalRequest":
      return block("plan-approval-request", envelope, [
        `${from} asks you to approve this plan before acting on it:`,
        `<plan>\n${text(kind.value.plan)}\n</plan>`,
        ...(settled ?? [
          "Answer it (exactly once) to approve, or to reject with feedback saying what to change:",
          cli
            ? `  team approve ${id}\n  team reject ${id} --feedback "<what to change>"`
            : `  plan_approval_response to "${from}": { request_id: "${id}", approve: true }\n  plan_approval_response to "${from}": { request_id: "${id}", approve: false, feedback: "<what to change>" }`,
        ]),
      ]);
    case "planApprovalResponse": {
      const r = kind.value;
      return block("plan-approval-response", envelope, [
        r.approve
          ? `${from} approved your plan (request ${r.requestId}). Go ahead with permission mode "${permissionModeName(r.permissionMode)}".`
          : `${from} rejected your plan (request ${r.requestId}). Feedback: ${text(r.feedback)}`,
        ...(r.feedback && r.approve ? [`Feedback: ${text(r.feedback)}`] : []),
        ...(r.approve ? [] : ["Revise the plan and submit it again (a new request)."]),
      ]);
    }
    case "taskNotification":
      return taskNotificationBlock(kind.value);
    case "taskClaimRequest":
      return block("task-claim-request", envelope, [
        `${from} asks to own task "${text(kind.value.taskId)}"${said("Note", kind.value.note)}`,
        ...(settled ??
          answerLines(
            cli,
            `Answer it (exactly once) to approve (${from} becomes the task's one owner), or to reject with a reason (the task stays unowned):`,
            [
              `task_claim_response to "${from}": { request_id: "${id}", approve: true }`,
              `task_claim_response to "${from}": { request_id: "${id}", approve: false, reason: "<why not>" }`,
            ],
            [
              `team task answer ${id} --approve`,
              `team task answer ${id} --reject --reason "<why not>"`,
            ],
          )),
      ]);
    case "taskClaimResponse": {
      const r = kind.value;
      return block("task-claim-response", envelope, [
        r.approve
          ? `${from} approved your ${task ? `claim${task}` : "task claim"} (request ${r.requestId}): the task is yours now.`
          : `${from} rejected your ${task ? `claim${task}` : "task claim"} (request ${r.requestId}): the task stays unowned. Reason: ${text(r.reason)}`,
        ...(r.approve
          ? signoffHint(cli, from, options.taskId ? text(options.taskId) : "<task-id>")
          : []),
      ]);
    }
    case "taskAssign":
      return block("task-assign", envelope, [
        `${from} assigned you task "${text(kind.value.taskId)}"${said("Note", kind.value.note)}`,
        "You own it now; no answer is needed.",
        ...signoffHint(cli, from, text(kind.value.taskId)),
      ]);
    case "taskHandoffRequest":
      return block("task-handoff-request", envelope, [
        `${from} asks you to take over task "${text(kind.value.taskId)}"${said("Note", kind.value.note)}`,
        ...(settled ??
          answerLines(
            cli,
            `Answer it (exactly once) to accept (you become its owner; if you are the lead, it becomes unowned again), or to reject with a reason (${from} keeps it):`,
            [
              `task_handoff_response to "${from}": { request_id: "${id}", accept: true }`,
              `task_handoff_response to "${from}": { request_id: "${id}", accept: false, reason: "<why not>" }`,
            ],
            [
              `team task answer ${id} --approve`,
              `team task answer ${id} --reject --reason "<why not>"`,
            ],
          )),
      ]);
    case "taskHandoffResponse": {
      const r = kind.value;
      return block("task-handoff-response", envelope, [
        r.accept
          ? `${from} accepted your handoff${task} (request ${r.requestId}): the task is no longer yours; stop working on it.`
          : `${from} declined your handoff${task} (request ${r.requestId}): you still own the task. Reason: ${text(r.reason)}`,
      ]);
    }
    case "resultSignoffRequest":
      return block("result-signoff-request", envelope, [
        `${from} asks you to sign off the result of task "${text(kind.value.taskId)}"${said("Summary", kind.value.summary)}`,
        `<result>\n${text(kind.value.result)}\n</result>`,
        ...(settled ??
          answerLines(
            cli,
            `Answer it (exactly once) to approve (the task is done), or to reject with feedback saying what to change (${from} keeps the task):`,
            [
              `result_signoff_response to "${from}": { request_id: "${id}", approve: true }`,
              `result_signoff_response to "${from}": { request_id: "${id}", approve: false, feedback: "<what to change>" }`,
            ],
            [
              `team task answer ${id} --approve`,
              `team task answer ${id} --reject --feedback "<what to change>"`,
            ],
          )),
      ]);
    case "resultSignoffResponse": {
      const r = kind.value;
      return block("result-signoff-response", envelope, [
        r.approve
          ? `${from} signed off your result${task} (request ${r.requestId}): the task is done.`
          : `${from} rejected your result${task} (request ${r.requestId}). Feedback: ${text(r.feedback)}`,
        ...(r.feedback && r.approve ? [`Feedback: ${text(r.feedback)}`] : []),
        ...(r.approve
          ? []
          : [
              "You still own the task: act on the feedback, then ask for sign-off again (a new request).",
            ]),
      ]);
    }
    case "permissionRequest": {
      const p = kind.value;
      return block("permission-request", envelope, [
        `${from} asks for permission to use the tool "${text(p.toolName)}": ${text(p.description)}`,
        ...(p.inputPreview ? [`<input>\n${text(p.inputPreview)}\n</input>`] : []),
        ...(settled ??
          answerLines(
            cli,
            `Answer it (exactly once) to allow this one use, or to deny it with a reason (${from}'s runtime is told either way):`,
            [
              `permission_response to "${from}": { request_id: "${id}", allow: true }`,
              `permission_response to "${from}": { request_id: "${id}", allow: false, reason: "<why not>" }`,
            ],
            [`team allow ${id}`, `team deny ${id} --reason "<why not>"`],
          )),
      ]);
    }
    case "permissionResponse": {
      const r = kind.value;
      return block("permission-response", envelope, [
        r.allow
          ? `${from} allowed your permission request ${r.requestId}: the tool may be used this once.`
          : `${from} denied your permission request ${r.requestId}. Reason: ${text(r.reason)}`,
        ...(r.allow ? [] : ["Do without the tool, or ask again with a different approach."]),
      ]);
    }
    case "requestUpdate": {
      const u = kind.value;
      const what = `${requestKindName(u.kind).replace("_", " ")} request ${u.requestId}${task}`;
      const now = `is now ${requestStatusName(u.status)}: ${text(u.detail)}`;
      // Cancels reach the addressee, expiries and a stopped addressee's cancels the
      // requester: the advice differs, so it is given only when the reader's side is known.
      const lines = {
        requester: [
          `Your ${what} ${now}`,
          "No answer to it will come; send a new request if you still need one.",
        ],
        addressee: [
          `The ${what} you were asked to answer ${now}`,
          "Do not answer it: nobody waits for an answer any more, and one would be refused.",
        ],
        unknown: [
          `The ${what} ${now}`,
          "It is no longer pending: no answer to it is needed, and none will come.",
        ],
      };
      // Only the requester is told of an expiry (server/protocols/expiry-sweeper.ts).
      const side = options.side ?? (u.status === RequestStatus.EXPIRED ? "requester" : "unknown");
      return block("request-update", envelope, lines[side]);
    }
    default:
      return block("message", envelope, ["(a message of a kind this client does not know)"]);
  }
}

/**
 * The lead's copy of an answer an approver gave on its behalf (stored in the lead's inbox,
 * addressed to the requester): told from the lead's side, with nothing to act on.
 */
function copyOfAnswer(
  envelope: Envelope,
  options: PromptTextOptions,
  task: string,
): string | undefined {
  const to = envelope.to;
  if (!options.reader || !to || to === "*" || to === options.reader) return undefined;
  const from = envelope.from || "the server";
  const kind = envelope.message?.kind ?? { case: undefined };
  const told = `${text(to)} has been told; nothing is asked of you.`;
  const whose = `${text(to)}'s`;
  switch (kind.case) {
    case "planApprovalResponse": {
      const r = kind.value;
      return block("plan-approval-response", envelope, [
        r.approve
          ? `${from} approved ${whose} plan (request ${r.requestId}) on your behalf: ${text(to)} goes ahead with permission mode "${permissionModeName(r.permissionMode)}".`
          : `${from} rejected ${whose} plan (request ${r.requestId}) on your behalf. Feedback: ${text(r.feedback)}`,
        ...(r.feedback && r.approve ? [`Feedback: ${text(r.feedback)}`] : []),
        told,
      ]);
    }
    case "taskClaimResponse": {
      const r = kind.value;
      return block("task-claim-response", envelope, [
        r.approve
          ? `${from} approved ${whose} claim${task} (request ${r.requestId}) on your behalf: the task is ${text(to)}'s now.`
          : `${from} rejected ${whose} claim${task} (request ${r.requestId}) on your behalf: the task stays unowned. Reason: ${text(r.reason)}`,
        told,
      ]);
    }
    case "resultSignoffResponse": {
      const r = kind.value;
      return block("result-signoff-response", envelope, [
        r.approve
          ? `${from} signed off ${whose} result${task} (request ${r.requestId}) on your behalf: the task is done.`
          : `${from} rejected ${whose} result${task} (request ${r.requestId}) on your behalf. Feedback: ${text(r.feedback)}`,
        ...(r.feedback && r.approve ? [`Feedback: ${text(r.feedback)}`] : []),
        told,
      ]);
    }
    case "permissionResponse": {
      const r = kind.value;
      return block("permission-response", envelope, [
        r.allow
          ? `${from} allowed ${whose} permission request ${r.requestId} on your behalf: the tool may be used this once.`
          : `${from} denied ${whose} permission request ${r.requestId} on your behalf. Reason: ${text(r.reason)}`,
        told,
      ]);
    }
    default:
      return undefined;
  }
}

/** ". Note: <what was said>" when something was, else "." */
const said = (label: string, words: string) => (words ? `. ${label}: ${text(words)}` : ".");

/** The sentence asking for an answer, then the answers, spelled for the reader's tool. */
const answerLines = (cli: boolean, ask: string, rpc: string[], commands: string[]) => [
  ask,
  (cli ? commands : rpc).map((line) => `  ${line}`).join("\n"),
];

/** An owner's next step: when the result is ready, the lead signs it off (`taskId` escaped). */
const signoffHint = (cli: boolean, lead: string, taskId: string) => [
  "When its result is ready, ask the lead to sign it off:",
  cli
    ? `  team task signoff ${taskId} --summary "<one line>" "<the result>"`
    : `  result_signoff_request to "${lead}": { task_id: "${taskId}", result: "<the result>", summary: "<one line>" }`,
];

/** The task-notification block: what Claude Code injects into a coordinator's conversation. */
function taskNotificationBlock(n: {
  taskId: string;
  status: number;
  summary: string;
  result: string;
  usage?: { totalTokens: bigint; toolUses: bigint; durationMs: bigint } | undefined;
}): string {
  const lines = [
    "<task-notification>",
    `<task-id>${text(n.taskId)}</task-id>`,
    `<status>${taskStatusName(n.status)}</status>`,
    `<summary>${text(n.summary)}</summary>`,
  ];
  if (n.result) lines.push(`<result>${text(n.result)}</result>`);
  if (n.usage) {
    lines.push(
      "<usage>",
      `  <total_tokens>${n.usage.totalTokens}</total_tokens>`,
      `  <tool_uses>${n.usage.toolUses}</tool_uses>`,
      `  <duration_ms>${n.usage.durationMs}</duration_ms>`,
      "</usage>",
    );
  }
  lines.push("</task-notification>");
  return lines.join("\n");
}

function block(tag: string, e: Envelope, body: string[]): string {
  const attrs = [
    ["from", e.from || "server"],
    ["to", e.to],
    ...(e.requestId ? [["request_id", e.requestId]] : []),
    ["seq", String(e.seq)],
    ...(e.sentAt ? [["sent_at", timestampDate(e.sentAt).toISOString()]] : []),
    // The id to name as reply_to when answering it.
    ...(e.id ? [["id", e.id]] : []),
  ];
  const open = `<${tag} ${attrs.map(([k, v]) => `${k}="${attribute(v ?? "")}"`).join(" ")}>`;
  const replied = e.replyTo ? [`(in reply to ${text(e.replyTo)})`] : [];
  return [open, ...replied, ...body, `</${tag}>`].join("\n");
}

// What a member wrote goes through text(): angle brackets escaped, so it cannot open or
// close a tag; everything else stays as written, for the model to read naturally.
const text = (s: string) => s.replace(/</g, "&lt;").replace(/>/g, "&gt;");
const attribute = (s: string) => text(s).replace(/"/g, "&quot;");
