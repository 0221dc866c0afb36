import type { Envelope } from "../gen/team/v1/records_pb.js";
import { as, type TeamClient } from "./connections.js";

/** An open Subscribe stream, read in the background. */
export interface OpenStream {
  /** Resolves with the first envelope's arrival (the stream is registered and live). */
  readonly firstEnvelope: Promise<void>;
  /** Resolves when the stream ends: undefined when closed by us, else the error. */
  readonly ended: Promise<Error | undefined>;
  /** false once the stream has ended, for whatever reason. */
  isOpen(): boolean;
  close(): void;
}

/**
 * Subscribes as `token` and calls `onEnvelope` with each envelope and the time it was read
 * (performance.now(), the clock every scenario measures with). The stream ends when
 * `close()` is called, `signal` aborts, or the server ends it.
 */
export function openStream(
  client: TeamClient,
  token: string,
  onEnvelope: (envelope: Envelope, atMs: number) => void,
  options: { afterSeq?: bigint; signal: AbortSignal },
): OpenStream {
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  options.signal.addEventListener("abort", onAbort, { once: true });
  let markFirst: () => void = () => {};
  const firstEnvelope = new Promise<void>((resolve) => {
    markFirst = resolve;
  });
  let open = true;
  const ended = (async () => {
    try {
      const request = options.afterSeq === undefined ? {} : { afterSeq: options.afterSeq };
      for await (const res of client.subscribe(request, as(token, { signal: controller.signal }))) {
        if (res.event.case !== "envelope") continue;
        const at = performance.now();
        markFirst();
        onEnvelope(res.event.value, at);
      }
      return undefined;
    } catch (err) {
      return controller.signal.aborted ? undefined : (err as Error);
    } finally {
      open = false;
      options.signal.removeEventListener("abort", onAbort);
    }
  })();
  return { firstEnvelope, ended, isOpen: () => open, close: () => controller.abort() };
}
