import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { RuleViolationSchema } from "@team-protocols/contract/team/v1/rule_violation_pb.js";
import { retryDelayMs } from "./retry-info.js";

/** Which protocol rule refused a call, decoded from the error's team.v1.RuleViolation detail. */
export interface Violation {
  /** The rule id from the rules table, e.g. "reason-on-reject". */
  rule: string;
  /** What was wrong and how to fix it. */
  sentence: string;
  /** The request field at fault, "" when there is none. */
  field: string;
}

/**
 * Every error a TeamClient call raises. It is a ConnectError (same code, message, metadata
 * and details), with the RuleViolation detail decoded once, so callers branch on
 * `err.violation?.rule` instead of parsing message text.
 */
export class TeamError extends ConnectError {
  // The name stays "ConnectError": ConnectError's instanceof check goes by it, so code that
  // catches ConnectErrors (connect-es itself included) keeps recognising this one.

  /** Set when a protocol rule refused the call. */
  readonly violation: Violation | undefined;

  constructor(error: ConnectError) {
    super(error.rawMessage, error.code, error.metadata, undefined, error.cause ?? error);
    this.details = error.details;
    const detail = error.findDetails(RuleViolationSchema)[0];
    this.violation = detail
      ? { rule: detail.rule, sentence: detail.description, field: detail.field }
      : undefined;
  }

  /** How long the server asked to wait before retrying (its RetryInfo detail), in ms. */
  get retryAfterMs(): number | undefined {
    return retryDelayMs(this);
  }

  /** The refusing rule's id, or undefined for errors that are not rule refusals. */
  get rule(): string | undefined {
    return this.violation?.rule;
  }

  /** The code as the Connect protocol spells it: "invalid_argument", "not_found", … */
  get codeName(): string {
    return codeName(this.code);
  }

  // ConnectError's own check accepts any ConnectError-shaped value; this one must not.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === "object" &&
      value !== null &&
      Object.prototype.isPrototypeOf.call(TeamError.prototype, value)
    );
  }

  /** Any thrown value as a TeamError (a TeamError is returned as it is). */
  static fromError(reason: unknown): TeamError {
    if (reason instanceof TeamError) return reason;
    return new TeamError(ConnectError.from(reason));
  }
}

/** "InvalidArgument" -> "invalid_argument", as in Connect's JSON errors. */
export function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase());
}

/** The rule violation carried by any error, or undefined. */
export function violationOf(err: unknown): Violation | undefined {
  return err instanceof ConnectError ? TeamError.fromError(err).violation : undefined;
}

/**
 * Turns every error of a call into a TeamError, for unary calls and for errors a server
 * stream raises while it is read.
 */
export const teamErrorInterceptor: Interceptor = (next) => async (req) => {
  try {
    const res = await next(req);
    if (!res.stream) return res;
    return { ...res, message: rethrowAsTeamError(res.message) };
  } catch (err) {
    throw TeamError.fromError(err);
  }
};

async function* rethrowAsTeamError<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (err) {
    throw TeamError.fromError(err);
  }
}
