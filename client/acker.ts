import type { Client } from "@connectrpc/connect";
import type { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";

/**
 * Acks in the background, so handling a message never waits for a round trip. Acks are
 * cumulative (ack N marks everything up to N consumed), so only the highest seq handled is
 * sent: one call in flight at a time, carrying the latest seq when it starts.
 */
export interface Acker {
  /** Records `seq` as handled and sends it soon. */
  ack(seq: bigint): void;
  /** Tries again to send what failed before (e.g. after a reconnect). */
  kick(): void;
  /** Resolves once the server has everything recorded; rejects with the last failure. */
  flush(): Promise<void>;
  /** The server's ack cursor, as far as this client has set it. */
  readonly acked: bigint;
}

export function createAcker(rpc: Client<typeof TeamService>, timeoutMs = 10_000): Acker {
  let wanted = 0n;
  let acked = 0n;
  let inFlight: Promise<void> | undefined;
  let failure: unknown;

  const send = (): Promise<void> => {
    inFlight ??= (async () => {
      try {
        while (wanted > acked) {
          const target = wanted;
          const res = await rpc.ack({ seq: target }, { timeoutMs });
          if (res.ackedSeq > acked) acked = res.ackedSeq;
          if (acked < target) acked = target;
          failure = undefined;
        }
      } catch (err) {
        // Kept until the next attempt: the server may be restarting; kick() or flush() retry.
        failure = err;
      } finally {
        inFlight = undefined;
      }
    })();
    return inFlight;
  };

  return {
    ack(seq) {
      if (seq <= wanted) return;
      wanted = seq;
      void send();
    },
    kick() {
      if (wanted > acked) void send();
    },
    async flush() {
      await inFlight;
      if (wanted > acked) await send();
      if (wanted > acked) throw failure ?? new Error(`ack of seq ${wanted} did not complete`);
    },
    get acked() {
      return acked;
    },
  };
}
