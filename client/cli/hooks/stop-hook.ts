import { create } from "@bufbuild/protobuf";
import type { Identity } from "@team-protocols/client/identity.js";
import { unreadMessages } from "@team-protocols/client/inbox-delivery.js";
import { toPromptText } from "@team-protocols/client/prompt-text.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { RequestKind } from "@team-protocols/contract/team/v1/enums_pb.js";
import { EnvelopeSchema, type RequestRecord } from "@team-protocols/contract/team/v1/records_pb.js";
import type { BlockCounter } from "./block-counter.js";
import { blockStop, type HookOutput } from "./hook-output.js";

export interface StopHookOptions {
  client: TeamClient;
  me: Identity;
  counter: BlockCounter;
  /** At most this many blocks in a row; then the stop goes through (never a loop). */
  maxBlocks: number;
}

/** What the Stop hook decided, and what to do once its answer was written. */
export interface StopDecision {
  output: HookOutput | undefined;
  /** Acks the messages the reason showed (call after the output was written). */
  delivered(): Promise<void>;
}

/**
 * Stop and SubagentStop: while a protocol request addressed to this member waits for its
 * answer, or messages it has not been shown are in its inbox (a plan answer to act on, a
 * claim to answer), the model may not stop: the reason names each request and the exact
 * answer expected. After `maxBlocks` blocks in a row the stop goes through, whatever waits.
 */
export async function decideStop(o: StopHookOptions): Promise<StopDecision> {
  const none: StopDecision = { output: undefined, delivered: async () => {} };
  if (o.me.role === "observer") return none;
  const blocks = await o.counter.current();
  if (blocks >= o.maxBlocks) {
    await o.counter.reset();
    return none;
  }
  const [waiting, unread] = await Promise.all([
    pendingFor(o.client, o.me.name),
    unreadMessages(o.client, { reader: o.me.name }),
  ]);
  // An unread request is shown once, as its message; the others from their records.
  const shown = new Set(unread.envelopes.map((e) => e.requestId).filter((id) => id !== ""));
  const older = waiting.filter((r) => !shown.has(r.requestId)).map(asPromptText);
  if (older.length === 0 && unread.texts.length === 0) {
    await o.counter.reset();
    return none;
  }
  const parts = [
    older.length + unread.texts.length === 1
      ? "Do not stop yet: this is addressed to you in your team and waits for you."
      : "Do not stop yet: these are addressed to you in your team and wait for you.",
    ...older,
    ...unread.texts,
    "Answer each request that is still pending exactly as it says (send_message of the team's MCP tools), then you may stop.",
  ];
  await o.counter.add();
  return { output: blockStop(parts.join("\n\n")), delivered: unread.ack };
}

/** Pending requests this member must answer (ListRequests shows both sides: keep its own). */
async function pendingFor(client: TeamClient, me: string): Promise<RequestRecord[]> {
  const { requests } = await client.listRequests({ status: "pending", party: me, pageSize: 50 });
  // task_assign is approved as it is made; nothing of it waits for an answer.
  return requests.filter((r) => r.to === me && r.kind !== RequestKind.TASK_ASSIGN).reverse();
}

/** A request record rendered as the message that opened it, with the answer expected. */
function asPromptText(r: RequestRecord): string {
  return toPromptText(
    create(EnvelopeSchema, {
      from: r.from,
      to: r.to,
      requestId: r.requestId,
      ...(r.request ? { message: r.request } : {}),
      ...(r.createdAt ? { sentAt: r.createdAt } : {}),
    }),
  );
}
