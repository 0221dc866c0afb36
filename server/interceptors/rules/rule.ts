import type { DescMethod, Message as ProtoMessage } from "@bufbuild/protobuf";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { Caller } from "../../caller.js";
import type { Refusal } from "../../errors.js";

/**
 * One stateless protocol rule of the table: it looks at one call (method, request message,
 * authenticated caller) and either passes or says what is wrong. Rules that need the database
 * (known-recipient, addressee-only, unknown-request, once-only) are enforced inside the
 * store's transaction instead.
 */
export interface Rule {
  /** The id used in error messages and RuleViolation.rule. */
  id: string;
  /** The code a refusal carries. */
  refusal: Refusal;
  /** The check; undefined when the call passes. */
  check(call: RuleCall): Violation | undefined;
}

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

export const M = TeamService.method;

// biome-ignore lint/suspicious/noExplicitAny: the request is narrowed by the method checks.
export type AnyRequest = Record<string, any>;

export interface SentMessage {
  case: string;
  value: AnyRequest;
  to: string;
}

/** The Message case a Send carries, with its value and addressee; undefined for other calls. */
export function sent(call: RuleCall): SentMessage | undefined {
  // Stryker disable next-line ConditionalExpression: equivalent; no other request has a
  // `message` field, so without this line every other call also ends in undefined below.
  if (call.method !== M.send) return undefined;
  const kind = call.request.message?.kind;
  if (kind?.case === undefined) return undefined;
  return { case: kind.case, value: kind.value, to: call.request.to };
}
