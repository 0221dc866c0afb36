import type { Message } from "@team-protocols/contract/team/v1/message_pb.js";

/** The Message case as the journal and the store name it (snake_case, as in the proto). */
export const messageAction = (message: Message | undefined): string =>
  (message?.kind.case ?? "").replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A protocol step is any structured message (text is conversation, not protocol). */
export const isProtocolMessage = (message: Message | undefined): boolean =>
  message?.kind.case !== undefined && message.kind.case !== "text";
