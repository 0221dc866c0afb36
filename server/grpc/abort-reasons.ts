import { Code, ConnectError } from "@connectrpc/connect";

/** The reason a call's signal aborts with when its client reset the stream mid-call. */
export const clientGone = () => new ConnectError("the client went away", Code.Canceled);

/** What connect's deadline signal aborts with (protocol/signals.ts), for the same answer. */
export const deadlinePassed = () =>
  new ConnectError("the operation timed out", Code.DeadlineExceeded);

/** Aborts a finished call's signal: one shared reason spares an error per call. */
export const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);
