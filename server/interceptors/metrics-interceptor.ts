import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { LimitError, RuleViolationError } from "../errors.js";
import type { Metrics } from "../metrics/metrics.js";
import { observeResponse, type StreamEnd, type StreamHooks } from "./observed-stream.js";

/** connect's snake_case code names ("invalid_argument"), made once instead of per call. */
const codeNames: Partial<Record<Code, string>> = Object.fromEntries(
  Object.values(Code)
    .filter((code): code is Code => typeof code === "number")
    .map((code) => [code, codeToString(code)]),
);

/**
 * Counts a call's end by method and code, and a refusal by its rule or limit. `err` is the
 * Connect error the call ended with (its cause the domain error that refused it), or
 * undefined for a success.
 */
function observeCallEnd(metrics: Metrics, method: string, err: unknown): void {
  if (err === undefined) {
    metrics.callEnded(method, "ok");
    return;
  }
  const ce = ConnectError.from(err);
  metrics.callEnded(method, codeNames[ce.code] ?? codeToString(ce.code));
  const cause = err instanceof RuleViolationError ? err : ce.cause;
  if (cause instanceof RuleViolationError) {
    metrics.refused(cause.rule, cause instanceof LimitError ? "limit" : "rule");
  }
}

/**
 * Outermost of TeamService's interceptors: it sees every call, and the error each ended
 * with once error mapping made it a Connect error. A Send's latency is its time through the
 * whole chain (auth, rules, the commit).
 */
export function metricsInterceptor(metrics: Metrics): Interceptor {
  return (next) => async (req) => {
    const method = req.method.name;
    const started = performance.now();
    try {
      const res = await next(req);
      if (res.stream) return observeResponse(res, new StreamEndCount(metrics, method, req.signal));
      if (req.method === TeamService.method.send) {
        metrics.sendSeconds((performance.now() - started) / 1000);
      }
      // A unary handler that answers because its client went away (AwaitRequest returns the
      // record as it stands) answered nobody: counted as canceled, not as a success. One that
      // answers at or after its deadline still reaches its client, with grpc-status 0 on both
      // paths, so it counts as answered: whether the deadline's timer fired before the answer
      // or just after is a race, and a metric must not depend on it.
      observeCallEnd(metrics, method, clientLeft(req.signal));
      return res;
    } catch (err) {
      observeCallEnd(metrics, method, err);
      throw err;
    }
  };
}

/**
 * Counts a stream's end. A class, not a closure over the request: an idle stream holds it for
 * as long as it is open, and the request would keep its headers and context values with it.
 */
class StreamEndCount implements StreamHooks {
  readonly #metrics: Metrics;
  readonly #method: string;
  readonly #signal: AbortSignal;

  constructor(metrics: Metrics, method: string, signal: AbortSignal) {
    this.#metrics = metrics;
    this.#method = method;
    this.#signal = signal;
  }

  onEnd(end: StreamEnd): void {
    // A stream the client leaves is closed by return(): neither ended nor thrown. A handler
    // that ends its stream because the call's signal aborted (the client left, e.g.
    // Subscribe's loop) is not a success either: counted as canceled.
    const outcome =
      end.kind === "error"
        ? end.error
        : end.kind === "done" && !this.#signal.aborted
          ? undefined
          : new ConnectError("the client went away", Code.Canceled);
    observeCallEnd(this.#metrics, this.#method, outcome);
  }
}

/** A unary call's outcome when its handler answered: Canceled if the client left first. */
function clientLeft(signal: AbortSignal): ConnectError | undefined {
  if (!signal.aborted) return undefined;
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) return undefined;
  return reason instanceof ConnectError
    ? reason
    : new ConnectError("the client went away", Code.Canceled);
}
