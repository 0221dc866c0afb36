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
  /** Records the task a request is about (GetRequest), for answers that do not name it. */
  knownTask(requestId: string, taskId: string): void;
  /** The task a request is about, as far as known ("" when not). */
  taskOf(requestId: string): string;
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

/** The task a request's record is about, when its request names one (claims, handoffs...). */
export const taskOfRequest = (request: { kind: { value?: unknown } } | undefined): string => {
  const taskId = (request?.kind.value as { taskId?: unknown } | undefined)?.taskId;
  return typeof taskId === "string" ? taskId : "";
};

export function createPromptReader(
  options: Pick<PromptTextOptions, "answers" | "reader"> = {},
): PromptReader {
  const addressedHere = new Set<string>();
  const answeredHere = new Set<string>();
  const statuses = new Map<string, RequestStatus>();
  const tasks = new Map<string, string>();
  // An answer received here: the reader asked, and the request is settled.
  const answered = (requestId: string, yes: boolean) => {
    answeredHere.add(requestId);
    statuses.set(requestId, yes ? RequestStatus.APPROVED : RequestStatus.REJECTED);
  };
  const observe = (e: Envelope) => {
    const kind = e.message?.kind;
    if (asksForAnswer(e)) addressedHere.add(e.requestId);
    const taskId = (kind?.value as { taskId?: unknown } | undefined)?.taskId;
    if (e.requestId && typeof taskId === "string" && taskId) tasks.set(e.requestId, taskId);
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
    knownTask: (requestId, taskId) => {
      tasks.set(requestId, taskId);
    },
    taskOf: (requestId) => tasks.get(requestId) ?? "",
    render(e) {
      observe(e);
      const kind = e.message?.kind;
      const taskId = e.requestId ? tasks.get(e.requestId) : undefined;
      const task = taskId ? { taskId } : {};
      if (kind?.case === "requestUpdate") {
        const id = kind.value.requestId;
        const side = addressedHere.has(id)
          ? "addressee"
          : answeredHere.has(id)
            ? "requester"
            : undefined;
        return toPromptText(e, { ...options, ...task, ...(side ? { side } : {}) });
      }
      const status = e.requestId ? statuses.get(e.requestId) : undefined;
      return toPromptText(e, { ...options, ...task, ...(status !== undefined ? { status } : {}) });
    },
  };
}
