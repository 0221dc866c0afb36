import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  type Message,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { RuleViolationSchema } from "@team-protocols/contract/team/v1/rule_violation_pb.js";
import {
  DomainError,
  LimitError,
  type Refusal,
  RuleViolationError,
  withoutStack,
} from "../errors.js";
import type { Logger } from "../logger.js";
import { classifyDriverError, UncertainCommitError } from "../store/sql-errors.js";
import { observeResponse, type StreamHooks } from "./observed-stream.js";
import { createRefusalLog, type RefusalLog } from "./refusal-log.js";
import { retryInfo } from "./retry-info.js";

const codeOf: Record<Refusal, Code> = {
  "invalid-argument": Code.InvalidArgument,
  "not-found": Code.NotFound,
  "already-exists": Code.AlreadyExists,
  "permission-denied": Code.PermissionDenied,
  "failed-precondition": Code.FailedPrecondition,
  "out-of-range": Code.OutOfRange,
  unauthenticated: Code.Unauthenticated,
  unavailable: Code.Unavailable,
  unimplemented: Code.Unimplemented,
  "resource-exhausted": Code.ResourceExhausted,
};

/**
 * The one place where errors become Connect errors. Domain errors keep their message and
 * get their code (and a RuleViolation detail for rule refusals); a database that cannot be
 * reached becomes Unavailable; anything else is a bug: Internal, with a generic message on
 * the wire and the cause in the log.
 */
// Node's stream errors when the client went away mid-call (aborted, connection dropped).
const clientGoneCodes = new Set([
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_STREAM_DESTROYED",
  "ERR_HTTP2_INVALID_STREAM",
  "ERR_HTTP2_STREAM_ERROR",
  "ERR_STREAM_WRITE_AFTER_END",
]);

export function toConnectError(err: unknown): ConnectError {
  // Undecodable requests (unary and streams alike) are InvalidArgument inside connect-es
  // itself (patches/@connectrpc+connect+2.1.2.patch), so they never arrive here as Internal.
  if (err instanceof ConnectError) return err;
  if (clientGoneCodes.has((err as { code?: string } | null)?.code ?? "")) {
    return new ConnectError("the client went away", Code.Canceled, undefined, undefined, err);
  }
  if (err instanceof DomainError) {
    const details: { desc: DescMessage; value: Message }[] =
      err instanceof RuleViolationError
        ? [
            {
              desc: RuleViolationSchema,
              value: create(RuleViolationSchema, {
                rule: err.rule,
                description: err.sentence,
                field: err.field,
              }),
            },
          ]
        : [];
    if (err instanceof LimitError && err.retryAfterMs !== undefined) {
      details.push(retryInfo(err.retryAfterMs));
    }
    // An answer, not a fault: no stack trace to capture (errors.ts says why).
    return withoutStack(
      () => new ConnectError(err.message, codeOf[err.refusal], undefined, details, err),
    );
  }
  if (classifyDriverError(err) === "unavailable") {
    return new ConnectError(
      err instanceof UncertainCommitError
        ? "the database may or may not have stored this; retry with the same message_id"
        : "the database is unavailable; retry shortly",
      Code.Unavailable,
      undefined,
      undefined,
      err,
    );
  }
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/**
 * The Connect error a call ends with, logged: a refusal is the client's business (a line
 * without a stack, at most one a second per method and code: refusal-log.ts); anything
 * else is ours (an error, with its cause). A call the client abandoned (`aborted`) ends in
 * whatever error the dead stream raised: a cancellation, not a fault of ours.
 */
/**
 * A logged message is capped as the wire's is (patches/: 1024 characters): a refusal can quote
 * a client's value, and a 1 MiB bad value must not become a 1 MiB log line per call.
 */
const MAX_LOGGED_MESSAGE = 1024;
const loggable = (message: string) =>
  message.length <= MAX_LOGGED_MESSAGE
    ? message
    : `${message.slice(0, MAX_LOGGED_MESSAGE)}… (truncated)`;

/** One refusal log per logger (per app): kinds are counted across every path of a call. */
const refusalLogs = new WeakMap<Logger, RefusalLog>();

export function reportCallError(
  logger: Logger,
  method: string,
  err: unknown,
  aborted: boolean,
  refusals: RefusalLog = refusalLogOf(logger),
): ConnectError {
  // A call whose deadline passed is aborted too, but its client is still there to be told.
  const deadline = err instanceof ConnectError && err.code === Code.DeadlineExceeded;
  const ce =
    aborted && !(err instanceof DomainError) && !deadline
      ? new ConnectError("the client went away", Code.Canceled, undefined, undefined, err)
      : toConnectError(err);
  if (ce.code === Code.Internal || ce.code === Code.Unavailable) {
    logger.error(
      { event: "rpc_error", method, code: Code[ce.code], err: ce.cause ?? err },
      loggable(ce.rawMessage),
    );
  } else {
    // At most one line a second per method and code (refusal-log.ts says why).
    const left = refusals.take(`${method} ${ce.code}`);
    if (left !== undefined) {
      logger.info(
        {
          event: "rpc_refused",
          method,
          code: Code[ce.code],
          ...(left > 0 ? { alsoRefused: left } : {}),
        },
        loggable(ce.rawMessage),
      );
    }
  }
  return ce;
}

function refusalLogOf(logger: Logger): RefusalLog {
  let log = refusalLogs.get(logger);
  if (!log) {
    log = createRefusalLog();
    refusalLogs.set(logger, log);
  }
  return log;
}

/** Maps errors of unary calls and of streams (thrown mid-stream) alike, and logs them. */
export function errorMappingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      // Whether the client went away matters only for errors that are not answers; a
      // refusal does not look, so a refused call never makes its lazy signal
      // (grpc/grpc-call.ts).
      throw reportCallError(
        logger,
        methodPath(req),
        err,
        !(err instanceof DomainError) && req.signal.aborted,
      );
    }
    if (!res.stream) return res;
    return observeResponse(res, new StreamErrorMapping(logger, req, req.signal));
  };
}

const methodPath = (req: { service: DescService; method: DescMethod }) =>
  `${req.service.typeName}/${req.method.name}`;

/**
 * A stream's errors, mapped as a call's are. What it keeps of the request is only what it
 * needs: an idle stream holds its hooks for as long as it is open, and the request would
 * keep its headers and context values with it.
 */
class StreamErrorMapping implements StreamHooks {
  readonly #logger: Logger;
  readonly #service: DescService;
  readonly #method: DescMethod;
  readonly #signal: AbortSignal;

  constructor(
    logger: Logger,
    req: { service: DescService; method: DescMethod },
    signal: AbortSignal,
  ) {
    this.#logger = logger;
    this.#service = req.service;
    this.#method = req.method;
    this.#signal = signal;
  }

  mapError(err: unknown): unknown {
    return reportCallError(
      this.#logger,
      methodPath({ service: this.#service, method: this.#method }),
      err,
      !(err instanceof DomainError) && this.#signal.aborted,
    );
  }
}
