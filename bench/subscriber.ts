import type { Envelope } from "../gen/team/v1/records_pb.js";
import { within } from "./bounded.js";
import { as, type Connections, type TeamClient } from "./connections.js";
import { type BenchTeam, text } from "./teams.js";

/** An open Subscribe stream, read in the background. */
export interface OpenStream {
  /**
   * Resolves with the first envelope's arrival (the stream is registered and live); rejects
   * with the stream's error if it ends before one, so a refused Subscribe does not leave a
   * scenario waiting for ever.
   */
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
  let failFirst: (err: Error) => void = () => {};
  const firstEnvelope = new Promise<void>((resolve, reject) => {
    markFirst = resolve;
    failFirst = reject;
  });
  // Handled here too: a caller that never awaits it must not crash the run on a rejection.
  firstEnvelope.catch(() => {});
  let open = true;
  let endError: Error | undefined;
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
      endError = err as Error;
      return controller.signal.aborted ? undefined : endError;
    } finally {
      open = false;
      // A no-op once the first envelope came (a settled promise stays as it is).
      failFirst(
        new Error(
          `the Subscribe stream ended before its first envelope: ${endError?.message ?? "closed"}`,
        ),
      );
      options.signal.removeEventListener("abort", onAbort);
    }
  })();
  return { firstEnvelope, ended, isOpen: () => open, close: () => controller.abort() };
}

/**
 * Every teammate of `team` subscribed live, each stream calling `onEnvelope` with its
 * teammate's index. Resolves once each stream has the lead's broadcast "ready": a broadcast
 * reaches a stream only once it is registered, so then every one is live.
 */
export async function openLiveStreams(
  team: BenchTeam,
  listeners: Connections,
  senders: Connections,
  onEnvelope: (mate: number, envelope: Envelope, atMs: number) => void,
  signal: AbortSignal,
): Promise<OpenStream[]> {
  const streams = team.teammates.map((mate, i) =>
    openStream(listeners.client(i), mate.token, (env, at) => onEnvelope(i, env, at), {
      afterSeq: 0n,
      signal,
    }),
  );
  await senders.client(0).send({ to: "*", message: text("ready") }, as(team.lead.token));
  await within(
    "every receiver's stream to be live",
    10_000,
    Promise.all(streams.map((s) => s.firstEnvelope)),
    signal,
  );
  return streams;
}
