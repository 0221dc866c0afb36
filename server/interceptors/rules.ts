import type { DescMethod, Message as ProtoMessage } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { type Caller, callerKey } from "../caller.js";
import { type Refusal, RuleViolationError } from "../errors.js";

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

export const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const MAX_TEXT_BYTES = 64 * 1024;
export const MAX_MESSAGE_ID_CHARS = 128;
const BROADCAST = "*";

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
      const message = request.message;
      if (message === undefined || message.kind.case === undefined) {
        return {
          sentence: 'message is required: set one case, e.g. {"text": "hello"}',
          field: "message",
        };
      }
      if (message.kind.case === "text") {
        if (message.kind.value.trim() === "") {
          return { sentence: "text is empty", field: "message.text" };
        }
        if (utf8Bytes(message.kind.value) > MAX_TEXT_BYTES) {
          return { sentence: `text is larger than ${MAX_TEXT_BYTES} bytes`, field: "message.text" };
        }
      }
    }
    return undefined;
  },
};

/** server-only: request_update is written by the server, never sent by a client. */
const serverOnly: Rule = {
  id: "server-only",
  refusal: "invalid-argument",
  check({ method, request }) {
    if (method === M.send && request.message?.kind.case === "requestUpdate") {
      return {
        sentence: "request_update messages are written by the server only",
        field: "message.request_update",
      };
    }
    return undefined;
  },
};

/** The table, in the order the rules are checked. */
export const rules: readonly Rule[] = [sizeShape, serverOnly];

/** Checks a unary call against the table; throws the first violation. */
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
