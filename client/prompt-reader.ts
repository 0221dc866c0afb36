import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import { type PromptTextOptions, toPromptText } from "./prompt-text.js";

/**
 * toPromptText for one reader's stream of envelopes, rendered from that reader's side.
 * It remembers what the stream showed: a request received here makes the reader its
 * addressee; a response or update received here settles the request. So a backlog read as
 * a batch (observe all, then render) shows a request canceled later in it as no longer
 * pending, and a cancel's request_update to the addressee gives the addressee's advice.
 * What the stream cannot show (the reader's own answer, sent elsewhere) comes from
 * `known`, e.g. with the status GetRequest returned.
 */
export interface PromptReader {
  /** Learns from an envelope without rendering it. */
  observe(envelope: Envelope): void;
  /** Records a request's status learned elsewhere (GetRequest). */
  known(requestId: string, status: RequestStatus): void;
  /** Observes the envelope, then renders it with what is known of its request. */
  render(envelope: Envelope): string;
}

/** The message cases that open a request the reader must answer. */
const ASKS_FOR_ANSWER = new Set([
  "shutdownRequest",
  "planApprovalRequest",
  "taskClaimRequest",
  "taskHandoffRequest",
  "resultSignoffRequest",
  "permissionRequest",
]);

/** True when the envelope asks its reader for an answer (its status is then worth knowing). */
export const asksForAnswer = (e: Envelope): boolean =>
  e.requestId !== "" && ASKS_FOR_ANSWER.has(e.message?.kind.case ?? "");

export function createPromptReader(options: Pick<PromptTextOptions, "answers"> = {}): PromptReader {
  const addressedHere = new Set<string>();
  const answeredHere = new Set<string>();
  const statuses = new Map<string, RequestStatus>();
  // An answer received here: the reader asked, and the request is settled.
  const answered = (requestId: string, yes: boolean) => {
    answeredHere.add(requestId);
    statuses.set(requestId, yes ? RequestStatus.APPROVED : RequestStatus.REJECTED);
  };
  const observe = (e: Envelope) => {
    const kind = e.message?.kind;
    if (asksForAnswer(e)) addressedHere.add(e.requestId);
    switch (kind?.case) {
      case "shutdownResponse":
      case "planApprovalResponse":
      case "taskClaimResponse":
      case "resultSignoffResponse":
        answered(kind.value.requestId, kind.value.approve);
        break;
      case "taskHandoffResponse":
        answered(kind.value.requestId, kind.value.accept);
        break;
      case "permissionResponse":
        answered(kind.value.requestId, kind.value.allow);
        break;
      case "requestUpdate":
        statuses.set(kind.value.requestId, kind.value.status);
        break;
    }
  };
  return {
    observe,
    known: (requestId, status) => {
      statuses.set(requestId, status);
    },
    render(e) {
      observe(e);
      const kind = e.message?.kind;
      if (kind?.case === "requestUpdate") {
        const id = kind.value.requestId;
        const side = addressedHere.has(id)
          ? "addressee"
          : answeredHere.has(id)
            ? "requester"
            : undefined;
        return toPromptText(e, { ...options, ...(side ? { side } : {}) });
      }
      const status = e.requestId ? statuses.get(e.requestId) : undefined;
      return toPromptText(e, { ...options, ...(status !== undefined ? { status } : {}) });
    },
  };
}
