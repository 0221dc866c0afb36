import type { Identity } from "@team-protocols/client/identity.js";
import { unreadMessages } from "@team-protocols/client/inbox-delivery.js";
import { memberRoleName, memberStatusName } from "@team-protocols/client/names.js";
import { roleDuties } from "@team-protocols/client/role-duties.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { addContext, type ClaudeHookEvent, type HookOutput } from "./hook-output.js";

/** What a context hook adds, and what to do once its answer was written. */
export interface ContextDecision {
  output: HookOutput | undefined;
  /** Acks the messages the context showed (call after the output was written). */
  delivered(): Promise<void>;
}

/**
 * UserPromptSubmit and PostToolUse: the messages that arrived since the last hook call
 * (everything after the server's ack cursor), as context, acked once given. So a runtime
 * without channels hears a shutdown request within one tool call.
 */
export async function newMessagesContext(
  client: TeamClient,
  me: Identity,
  event: ClaudeHookEvent,
): Promise<ContextDecision> {
  if (me.role === "observer") return { output: undefined, delivered: async () => {} };
  const unread = await unreadMessages(client, { reader: me.name });
  if (unread.texts.length === 0) return { output: undefined, delivered: async () => {} };
  const text = [messagesHeading(unread.texts.length, me), ...unread.texts].join("\n\n");
  return { output: addContext(event, text), delivered: unread.ack };
}

/** SessionStart: the role's duties, the team's members, and the backlog. */
export async function sessionStartContext(
  client: TeamClient,
  me: Identity,
): Promise<ContextDecision> {
  const [members, unread] = await Promise.all([
    client.members(),
    me.role === "observer" ? undefined : unreadMessages(client, { reader: me.name }),
  ]);
  const roster = members.map(
    (m) => `- ${m.name} (${memberRoleName(m.role)}, ${memberStatusName(m.status)})`,
  );
  const parts = [
    [
      `You are "${me.name}" (${me.role}) in a team whose protocols a server enforces; the team's MCP tools (send_message, wait_for_messages, ...) reach it.`,
      "The team:",
      ...roster,
      "",
      "Your duties:",
      ...roleDuties(me.role),
    ].join("\n"),
    ...(unread && unread.texts.length > 0
      ? [messagesHeading(unread.texts.length, me), ...unread.texts]
      : []),
  ];
  return {
    output: addContext("SessionStart", parts.join("\n\n")),
    delivered: unread ? unread.ack : async () => {},
  };
}

const messagesHeading = (n: number, me: Identity) =>
  `${n === 1 ? "A message" : `${n} messages`} for ${me.name} from your team (answer protocol requests exactly as each says, with send_message):`;
