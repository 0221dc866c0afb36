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

/**
 * A domain error carries no stack trace: it is an answer (the client's request broke a rule,
 * named in its message), not a fault to trace, and capturing the stack was the largest
 * single cost of a refusal (measured: a refused Send cost more CPU than a stored one). Its
 * `cause`, when it wraps a driver error, keeps that error's stack.
 */
export class DomainError extends Error {
  override readonly name = "DomainError";
  readonly refusal: Refusal;
  constructor(refusal: Refusal, message: string, options?: ErrorOptions) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message, options);
    Error.stackTraceLimit = limit;
    this.refusal = refusal;
  }
}

/** `make()`'s error without a stack trace (see DomainError): for errors that are answers. */
export function withoutStack<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
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
    /** ResourceExhausted, but failed authentication throttled stays Unauthenticated. */
    refusal: "resource-exhausted" | "unauthenticated" = "resource-exhausted",
  ) {
    super(limit, refusal, sentence, field);
  }
}
