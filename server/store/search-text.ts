import { fromBinary, type Message as ProtoMessage } from "@bufbuild/protobuf";
import { describeMessage } from "@team-protocols/client/describe.js";
import { type Message, MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";

/**
 * A stored message as the words full-text search indexes (migration 012): the case's name
 * and every field a member wrote, as `team watch` and the CLI print it (client/describe.ts),
 * then any string field that line leaves out (a task notification's description, a
 * permission request's runtime id), so every word of every case is found. Not the prompt
 * text an agent is shown: its answering instructions would make every request match
 * "approve" and "reject". PostgreSQL text holds no U+0000, so it becomes a space.
 */
export function searchTextOf(body: Uint8Array): string {
  let message: Message;
  try {
    message = fromBinary(MessageSchema, body);
  } catch {
    // The server stores only messages it serialized itself; a body it cannot read back is
    // stored all the same (never lose a message for its index), found by no search.
    return "";
  }
  const described = describeMessage(message);
  const left = stringFields(message).filter((s) => s !== "" && !described.includes(s));
  return [described, ...left].join("\n").replace(/\0/g, " ");
}

/** The string fields of the message's case, in field order. */
function stringFields(message: Message): string[] {
  const value = message.kind.value;
  if (typeof value !== "object" || value === null) return [];
  const fields = (value as ProtoMessage).$typeName
    ? Object.entries(value).filter(([k]) => k !== "$typeName")
    : [];
  return fields.map(([, v]) => v).filter((v): v is string => typeof v === "string");
}
