import { Code } from "@connectrpc/connect";

/**
 * Why a long-lived stream (the inbox, the team watch) broke, when reconnecting can help:
 * broken connections, restarts, overload. Anything else (a revoked token, a teammate's token
 * on WatchTeam, a bad request or cursor) will not get better by retrying and ends the
 * iteration with the error.
 */
export const RETRYABLE_STREAM_CODES: ReadonlySet<Code> = new Set([
  Code.Unavailable,
  Code.Internal,
  Code.Unknown,
  Code.DeadlineExceeded,
  Code.Aborted,
  Code.ResourceExhausted,
  Code.Canceled,
]);
