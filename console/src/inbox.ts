import { resumableStream } from "@team-protocols/client/resumable-stream.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import type { SubscribeResponse } from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { FeedStatus } from "./feed.js";
import type { TeamRpc } from "./rpc.js";

export interface InboxHandlers {
  onEnvelope(envelope: Envelope): void;
  /** The inbox is idle (a good moment to refresh what messages do not carry). */
  onHeartbeat(): void;
  onStatus(status: FeedStatus): void;
}

/** As the feed's: a silent connection is replaced after this long (heartbeats come every 15 s). */
const SILENCE_MS = 45_000;

/**
 * The signed-in member's own inbox, live (Subscribe), for a teammate or an approver, whom
 * WatchTeam refuses: the whole inbox from seq 1, then, after a break, from the last seq
 * received. It never acks: the console only reads, so the member's agent still gets every
 * message from its own cursor.
 */
export async function runInbox(rpc: TeamRpc, handlers: InboxHandlers, signal: AbortSignal) {
  let afterSeq = 0n;
  let connects = 0;
  let breaks = 0;
  const responses = resumableStream<SubscribeResponse, SubscribeResponse>({
    open: (attempt) => rpc.subscribe({ afterSeq }, { signal: attempt }),
    onResponse: (response) => {
      if (response.event.case === "envelope") afterSeq = response.event.value.seq;
      else if (response.event.case === "heartbeat" && response.event.value.lastSeq > afterSeq)
        afterSeq = response.event.value.lastSeq;
      return response;
    },
    closed: signal,
    backoff: { initialMs: 250, maxMs: 5_000 },
    idleTimeoutMs: SILENCE_MS,
    onStatus: (status) => {
      switch (status.state) {
        case "connecting":
          return handlers.onStatus({ state: "connecting", connects });
        case "connected":
          breaks = 0;
          connects++;
          return handlers.onStatus({ state: "live", connects });
        case "disconnected":
          breaks++;
          return handlers.onStatus({
            state: "retrying",
            connects,
            attempt: breaks,
            error: status.error ?? new Error("the server ended the inbox stream"),
          });
      }
    },
  });
  try {
    for await (const response of responses) {
      if (response.event.case === "envelope") handlers.onEnvelope(response.event.value);
      else handlers.onHeartbeat();
    }
  } catch (error) {
    if (!signal.aborted) handlers.onStatus({ state: "ended", connects, error });
  }
}
