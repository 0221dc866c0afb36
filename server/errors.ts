/**
 * Domain errors: what the store, the rules and the handlers throw. They say what went wrong
 * in the service's own terms; `interceptors/error-mapping.ts` is the one place that turns
 * them into Connect errors (code, message, RuleViolation detail).
 */

/** What kind of refusal; each maps to one Connect code. */
export type Refusal =
  | "invalid-argument"
  | "not-found"
  | "already-exists"
  | "permission-denied"
  | "failed-precondition"
  | "out-of-range"
  | "unauthenticated"
  | "unavailable"
  | "unimplemented"
  | "resource-exhausted";

export class DomainError extends Error {
  override readonly name = "DomainError";
  constructor(
    readonly refusal: Refusal,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A refusal by one of the protocol rules of DESIGN.md's table. Its message starts with the
 * rule id, and the client receives a team.v1.RuleViolation detail naming the rule.
 */
export class RuleViolationError extends DomainError {
  constructor(
    readonly rule: string,
    refusal: Refusal,
    readonly sentence: string,
    readonly field = "",
  ) {
    super(refusal, `${rule}: ${sentence}`);
  }
}

/**
 * A refusal by one of the server's limits (a rate, a backlog): ResourceExhausted, with the
 * limit's id as the RuleViolation's rule and, when waiting helps, how long to wait (the
 * client gets a google.rpc.RetryInfo detail).
 */
export class LimitError extends RuleViolationError {
  constructor(
    limit: string,
    sentence: string,
    readonly retryAfterMs?: number,
    field = "",
  ) {
    super(limit, "resource-exhausted", sentence, field);
  }
}
