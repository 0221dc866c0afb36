import { create, toBinary } from "@bufbuild/protobuf";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import { requestKindToProto, requestStatusToProto } from "../domain/enums.js";
import type { Queryable } from "../store/database.js";
import type { RequestRow, RequestStatus } from "../store/requests.js";
import { appendToInboxes, type Delivery } from "../store/send.js";

/**
 * Stores a server-written `request_update` in one party's inbox: the request changed state
 * without an answer (it expired, or was canceled). A stopped member receives nothing new.
 * Returns the delivery, if any, so the caller can wake the inbox after commit.
 */
export async function deliverRequestUpdate(
  tx: Queryable,
  request: RequestRow,
  status: RequestStatus,
  recipient: "requester" | "addressee",
  detail: string,
): Promise<Delivery | undefined> {
  const id = recipient === "requester" ? request.fromId : request.toId;
  const name = recipient === "requester" ? request.fromName : request.toName;
  const [active] = await tx.query("SELECT 1 FROM members WHERE id = $1 AND status = 'active'", [
    id,
  ]);
  if (!active) return undefined;
  const message = create(MessageSchema, {
    kind: {
      case: "requestUpdate",
      value: {
        requestId: request.id,
        kind: requestKindToProto(request.kind),
        status: requestStatusToProto(status),
        detail,
      },
    },
  });
  const [delivery] = await appendToInboxes(
    tx,
    {
      teamId: request.teamId,
      senderId: null,
      fromName: "",
      to: name,
      kind: "request_update",
      body: toBinary(MessageSchema, message),
      requestId: request.id,
    },
    [{ id, name }],
  );
  return delivery;
}
