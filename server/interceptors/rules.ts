import type { DescMethod, Message as ProtoMessage } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { type Caller, callerKey } from "../caller.js";
import {
  MAX_MESSAGE_ID_CHARS,
  MAX_NOTE_BYTES,
  MAX_PLAN_BYTES,
  MAX_RESULT_BYTES,
  MAX_SEQ,
  MAX_TEXT_BYTES,
  MAX_TTL_MS,
  MIN_TTL_MS,
  NAME_PATTERN,
} from "../domain/limits.js";
import { BROADCAST } from "../domain/names.js";
import { type Refusal, RuleViolationError } from "../errors.js";
import { observerReadOnly, watchLeadOrObserver } from "./observer-rules.js";

/**
 * The stateless protocol rules of DESIGN.md, as one table. Each rule looks at one call
 * (method, request message, authenticated caller) and either passes or says what is wrong.
 * Rules that need the database (known-recipient, addressee-only, unknown-request,
 * once-only) are enforced inside the store's transaction instead.
 */
export interface RuleCall {
  method: DescMethod;
  // biome-ignore lint/suspicious/noExplicitAny: each rule narrows by method before reading fields.
  request: ProtoMessage & Record<string, any>;
  caller: Caller | undefined;
}

export interface Violation {
  sentence: string;
  field?: string;
}

export interface Rule {
  /** The id used in error messages and RuleViolation.rule. */
  id: string;
  /** The code a refusal carries. */
  refusal: Refusal;
  /** The check; undefined when the call passes. */
  check(call: RuleCall): Violation | undefined;
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");

function nameViolation(value: string, field: string, what: string): Violation | undefined {
  if (NAME_PATTERN.test(value)) return undefined;
  return {
    sentence:
      value === ""
        ? `${what} is required`
        : `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid name: use 1 to 64 ` +
          "characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit",
    field,
  };
}

const M = TeamService.method;

const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;

// biome-ignore lint/suspicious/noExplicitAny: the request is narrowed by the method checks.
type AnyRequest = Record<string, any>;

interface SentMessage {
  case: string;
  value: AnyRequest;
  to: string;
}

/** The Message case a Send carries, with its value; undefined for other calls. */
function sent(call: RuleCall): SentMessage | undefined {
  if (call.method !== M.send) return undefined;
  const kind = call.request.message?.kind;
  if (kind?.case === undefined) return undefined;
  return { case: kind.case, value: kind.value, to: call.request.to };
}

const tooBig = (value: string, max: number) => utf8Bytes(value) > max;

function sizeOfMessage(c: { case: string; value: AnyRequest }): Violation | undefined {
  const v = c.value;
  const over = (field: string, value: string, max: number): Violation | undefined =>
    tooBig(value, max) ? { sentence: `${field} is larger than ${max} bytes`, field } : undefined;
  const requestId = (field: string): Violation | undefined =>
    REQUEST_ID.test(v.requestId)
      ? undefined
      : {
          sentence:
            v.requestId === ""
              ? `${field} is required: the request_id of the request you answer`
              : `${field} ${JSON.stringify(String(v.requestId).slice(0, 64))} is not a request id`,
          field,
        };
  switch (c.case) {
    case "text": {
      const text = c.value as unknown as string;
      if (text.trim() === "") return { sentence: "text is empty", field: "message.text" };
      return over("message.text", text, MAX_TEXT_BYTES);
    }
    case "shutdownRequest":
      return over("message.shutdown_request.reason", v.reason, MAX_NOTE_BYTES);
    case "shutdownResponse":
      return (
        requestId("message.shutdown_response.request_id") ??
        over("message.shutdown_response.reason", v.reason, MAX_NOTE_BYTES)
      );
    case "planApprovalRequest":
      if (v.plan.trim() === "") {
        return { sentence: "plan is empty", field: "message.plan_approval_request.plan" };
      }
      return over("message.plan_approval_request.plan", v.plan, MAX_PLAN_BYTES);
    case "planApprovalResponse":
      return (
        requestId("message.plan_approval_response.request_id") ??
        over("message.plan_approval_response.feedback", v.feedback, MAX_NOTE_BYTES)
      );
    case "taskNotification": {
      const field = "message.task_notification";
      if (v.status === 0) {
        return {
          sentence: "status is required: completed, failed or stopped",
          field: `${field}.status`,
        };
      }
      if (![1, 2, 3].includes(v.status)) {
        return {
          sentence: `status ${v.status} is not a known task status`,
          field: `${field}.status`,
        };
      }
      return (
        over(`${field}.task_id`, v.taskId, 256) ??
        over(`${field}.description`, v.description, MAX_NOTE_BYTES) ??
        over(`${field}.summary`, v.summary, MAX_NOTE_BYTES) ??
        over(`${field}.error`, v.error, MAX_NOTE_BYTES) ??
        over(`${field}.result`, v.result, MAX_RESULT_BYTES)
      );
    }
  }
  return undefined;
}

/** size-shape: names and bodies have the shapes and sizes the contract promises. */
const sizeShape: Rule = {
  id: "size-shape",
  refusal: "invalid-argument",
  check({ method, request }) {
    if (method === M.createTeam) {
      return (
        nameViolation(request.team, "team", "team") ??
        (request.leadName === ""
          ? undefined
          : nameViolation(request.leadName, "lead_name", "lead_name"))
      );
    }
    if (method === M.addMember || method === M.removeMember) {
      return nameViolation(request.name, "name", "name");
    }
    if (method === M.send) {
      if (request.to !== BROADCAST) {
        const v = nameViolation(request.to, "to", "to");
        if (v) return v;
      }
      if ([...request.messageId].length > MAX_MESSAGE_ID_CHARS) {
        return {
          sentence: `message_id is longer than ${MAX_MESSAGE_ID_CHARS} characters`,
          field: "message_id",
        };
      }
      // PostgreSQL text cannot hold U+0000; other control characters are no better as keys.
      if (/\p{Cc}/u.test(request.messageId)) {
        return { sentence: "message_id contains control characters", field: "message_id" };
      }
      const kind = request.message?.kind;
      if (kind?.case === undefined) {
        return {
          sentence: 'message is required: set one case, e.g. {"text": "hello"}',
          field: "message",
        };
      }
      if (request.ttl !== undefined) {
        if (kind.case !== "shutdownRequest" && kind.case !== "planApprovalRequest") {
          return { sentence: "ttl applies to protocol requests only", field: "ttl" };
        }
        const ms = Number(request.ttl.seconds) * 1000 + request.ttl.nanos / 1e6;
        if (!(ms >= MIN_TTL_MS && ms <= MAX_TTL_MS)) {
          return {
            sentence: `ttl must be between ${MIN_TTL_MS / 1000} s and ${MAX_TTL_MS / 86_400_000} days`,
            field: "ttl",
          };
        }
      }
      return sizeOfMessage(kind);
    }
    if (method === M.getRequest || method === M.awaitRequest || method === M.cancelRequest) {
      const v = requestIdViolation(request.requestId);
      if (v) return v;
    }
    if (method === M.ack && request.seq > MAX_SEQ) {
      return { sentence: `seq is larger than ${MAX_SEQ}`, field: "seq" };
    }
    if (
      (method === M.readInbox || method === M.subscribe) &&
      request.afterSeq !== undefined &&
      request.afterSeq > MAX_SEQ
    ) {
      return { sentence: `after_seq is larger than ${MAX_SEQ}`, field: "after_seq" };
    }
    if (method === M.listRequests && request.party !== "") {
      return nameViolation(request.party, "party", "party");
    }
    if (method === M.listAttempts) {
      if (request.member !== "") {
        const v = nameViolation(request.member, "member", "member");
        if (v) return v;
      }
      // Any id an attempt may have named (a refusal keeps a malformed one, up to 128
      // characters), but nothing PostgreSQL text cannot hold.
      if ([...request.requestId].length > 128 || /\p{Cc}/u.test(request.requestId)) {
        return {
          sentence: "request_id is longer than 128 characters or contains control characters",
          field: "request_id",
        };
      }
    }
    return undefined;
  },
};

function requestIdViolation(value: string): Violation | undefined {
  if (REQUEST_ID.test(value)) return undefined;
  return {
    sentence:
      value === ""
        ? "request_id is required"
        : `request_id ${JSON.stringify(String(value).slice(0, 64))} is not a request id`,
    field: "request_id",
  };
}

/** server-only: request_update is written by the server, never sent by a client. */
const serverOnly: Rule = {
  id: "server-only",
  refusal: "invalid-argument",
  check(call) {
    if (sent(call)?.case !== "requestUpdate") return undefined;
    return {
      sentence: "request_update messages are written by the server only",
      field: "message.request_update",
    };
  },
};

/** no-broadcast: structured messages go to one member, never to "*". */
const noBroadcast: Rule = {
  id: "no-broadcast",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (!m || m.case === "text" || m.to !== BROADCAST) return undefined;
    return {
      sentence: 'structured messages cannot be broadcast (to: "*"); address one member',
      field: "to",
    };
  },
};

/** lead-only-shutdown: only the lead asks a teammate to shut down. */
const leadOnlyShutdown: Rule = {
  id: "lead-only-shutdown",
  refusal: "permission-denied",
  check(call) {
    if (sent(call)?.case !== "shutdownRequest" || call.caller?.role === "lead") return undefined;
    return { sentence: "only the team lead may send a shutdown_request" };
  },
};

/** shutdown-to-teammate: the lead asks a teammate, not itself. */
const shutdownToTeammate: Rule = {
  id: "shutdown-to-teammate",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "shutdownRequest" || m.to !== call.caller?.lead.name) return undefined;
    return { sentence: "a shutdown_request goes to a teammate, not to the lead", field: "to" };
  },
};

/** response-to-lead: a shutdown_response is addressed to the lead. */
const responseToLead: Rule = {
  id: "response-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    const lead = call.caller?.lead.name;
    if (m?.case !== "shutdownResponse" || m.to === lead) return undefined;
    return { sentence: `shutdown_response must be sent to the team lead "${lead}"`, field: "to" };
  },
};

/** reason-on-reject: rejecting a shutdown says why. */
const reasonOnReject: Rule = {
  id: "reason-on-reject",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "shutdownResponse" || m.value.approve || m.value.reason.trim() !== "") {
      return undefined;
    }
    return {
      sentence: "reason is required when rejecting a shutdown request",
      field: "message.shutdown_response.reason",
    };
  },
};

/** lead-only-approval: only the lead answers a plan approval request. */
const leadOnlyApproval: Rule = {
  id: "lead-only-approval",
  refusal: "permission-denied",
  check(call) {
    if (sent(call)?.case !== "planApprovalResponse" || call.caller?.role === "lead") {
      return undefined;
    }
    return { sentence: "only the team lead may approve or reject plans" };
  },
};

/** plan-to-lead: plans are submitted to the lead, by a teammate. */
const planToLead: Rule = {
  id: "plan-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    if (m?.case !== "planApprovalRequest") return undefined;
    const lead = call.caller?.lead.name;
    if (m.to !== lead) {
      return {
        sentence: `plan_approval_request must be sent to the team lead "${lead}"`,
        field: "to",
      };
    }
    if (call.caller?.role === "lead") {
      return { sentence: "the lead does not submit plans to itself", field: "to" };
    }
    return undefined;
  },
};

/** task-to-lead: task notifications report to the lead. */
const taskToLead: Rule = {
  id: "task-to-lead",
  refusal: "invalid-argument",
  check(call) {
    const m = sent(call);
    const lead = call.caller?.lead.name;
    if (m?.case !== "taskNotification" || m.to === lead) return undefined;
    return { sentence: `task_notification must be sent to the team lead "${lead}"`, field: "to" };
  },
};

/**
 * The table, in the order the rules are checked: shape first (so later rules can trust
 * it), then who may send what to whom.
 */
export const rules: readonly Rule[] = [
  sizeShape,
  observerReadOnly,
  watchLeadOrObserver,
  serverOnly,
  noBroadcast,
  leadOnlyShutdown,
  shutdownToTeammate,
  responseToLead,
  reasonOnReject,
  leadOnlyApproval,
  planToLead,
  taskToLead,
];

/**
 * Checks a call against the table; throws the first violation. The interceptor calls it for
 * unary calls; Subscribe (a stream, whose request the interceptor cannot read) calls it itself.
 */
export function checkRules(call: RuleCall, table: readonly Rule[] = rules): void {
  for (const rule of table) {
    const violation = rule.check(call);
    if (violation) {
      throw new RuleViolationError(rule.id, rule.refusal, violation.sentence, violation.field);
    }
  }
}

/** Applies the rules table to every unary TeamService call, after authentication. */
export function rulesInterceptor(table: readonly Rule[] = rules): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      checkRules(
        {
          method: req.method,
          request: req.message as RuleCall["request"],
          caller: req.contextValues.get(callerKey),
        },
        table,
      );
    }
    return next(req);
  };
}
