import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageSchema } from "../../gen/team/v1/message_pb.js";
import { EnvelopeSchema } from "../../gen/team/v1/records_pb.js";

/** When the envelopes of the rendering tests were sent. */
export const SENT_AT = "2025-03-09T12:00:00.000Z";

/** An envelope as a member's inbox would hold it, for rendering tests (no server). */
export function envelopeOf(
  message: MessageInitShape<typeof MessageSchema>,
  over: {
    from?: string;
    to?: string;
    requestId?: string;
    seq?: bigint;
    id?: string;
    threadId?: string;
    replyTo?: string;
  } = {},
) {
  return create(EnvelopeSchema, {
    team: "demo",
    seq: over.seq ?? 7n,
    from: over.from ?? "team-lead",
    to: over.to ?? "alice",
    requestId: over.requestId ?? "",
    sentAt: timestampFromDate(new Date(SENT_AT)),
    message,
    id: over.id ?? "",
    threadId: over.threadId ?? "",
    replyTo: over.replyTo ?? "",
  });
}
