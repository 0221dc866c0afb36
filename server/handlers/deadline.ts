import { Code, ConnectError } from "@connectrpc/connect";

/**
 * A server stream whose loop ended because the call's deadline (grpc-timeout,
 * connect-timeout-ms) passed must say so: ending it OK would tell the client the stream
 * finished by itself. connect ends a stream with whatever the handler returns, and the
 * deadline only aborts the call's signal, so each streaming handler calls this after its loop.
 */
export function throwIfDeadlinePassed(signal: AbortSignal): void {
  const passed = deadlineError(signal);
  if (passed) throw passed;
}

/** The deadline's error when the call's signal aborted because its deadline passed. */
export function deadlineError(signal: AbortSignal): ConnectError | undefined {
  const reason: unknown = signal.reason;
  return signal.aborted && reason instanceof ConnectError && reason.code === Code.DeadlineExceeded
    ? reason
    : undefined;
}
