import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import {
  asksForAnswer,
  createPromptReader,
  type PromptReader,
  taskOfRequest,
} from "./prompt-reader.js";
import type { TeamClient } from "./team-client.js";

/**
 * Messages a runtime is about to be shown, rendered for its model, and acked only once it
 * was shown. Used by the hooks and by the channel push: both read the inbox after the
 * server's ack cursor, hand the text over, then call `ack()`.
 *
 * Delivery stays at-least-once: a process that dies after showing and before acking shows
 * the same messages again next time. A request asked again that was answered in between is
 * rendered as no longer pending (its status is looked up before rendering), so a
 * redelivery never asks the model for a second answer.
 */
export interface InboxDelivery {
  envelopes: Envelope[];
  /** Each envelope as toPromptText renders it, from this member's side. */
  texts: string[];
  /** Acks the last envelope (nothing when there were none). */
  ack(): Promise<void>;
}

export async function unreadMessages(
  client: TeamClient,
  options: { limit?: number; afterSeq?: bigint; reader?: string } = {},
): Promise<InboxDelivery> {
  const { envelopes } = await client.readInbox({
    limit: options.limit ?? 50,
    ...(options.afterSeq !== undefined ? { afterSeq: options.afterSeq } : {}),
  });
  const reader = createPromptReader(options.reader ? { reader: options.reader } : {});
  await learnStatuses(client, reader, envelopes);
  const texts = envelopes.map((e) => reader.render(e));
  const last = envelopes.at(-1);
  return {
    envelopes,
    texts,
    ack: async () => {
      if (last) await client.ack(last.seq);
    },
  };
}

/**
 * The status of every request these envelopes ask the reader to answer, as the server has
 * it now: a redelivered request answered meanwhile then reads as settled. And the task of
 * each answer or update whose body does not name it (a task_claim_response carries only its
 * request_id), so the model is told which task it now owns, not "<task-id>".
 */
export async function learnStatuses(
  client: TeamClient,
  reader: PromptReader,
  envelopes: Envelope[],
): Promise<void> {
  const asked = new Set(envelopes.filter(asksForAnswer).map((e) => e.requestId));
  const answers = new Set(
    envelopes
      .filter((e) => e.requestId && !asksForAnswer(e) && !bodyNamesTask(e))
      .map((e) => e.requestId),
  );
  const ids = [...new Set([...asked, ...answers])];
  const records = await Promise.all(ids.map((id) => client.getRequest(id).catch(() => undefined)));
  for (const record of records) {
    if (!record) continue;
    if (asked.has(record.requestId) && record.status !== RequestStatus.PENDING) {
      reader.known(record.requestId, record.status);
    }
    const taskId = taskOfRequest(record.request);
    if (taskId) reader.knownTask(record.requestId, taskId);
  }
}

const bodyNamesTask = (e: Envelope) =>
  typeof (e.message?.kind.value as { taskId?: unknown } | undefined)?.taskId === "string";
