import { MemberRole } from "@team-protocols/contract/team/v1/enums_pb.js";
import { type MemberRoleWord, memberRoleWords } from "@team-protocols/contract/words.js";
import type { TeamClient } from "./team-client.js";

export interface Identity {
  /** The team's name (older servers: ""). */
  team?: string;
  name: string;
  role: MemberRoleWord;
  /** The lead's name: answers, plans and reports go to it. */
  lead: string;
}

/** Who a token belongs to: ListMembers names the caller (`you`), and the list has its role. */
export async function whoAmI(client: TeamClient): Promise<Identity> {
  const { members, you, team } = await client.rpc.listMembers({});
  const lead = members.find((m) => m.role === MemberRole.LEAD);
  const me = members.find((m) => m.name === you);
  const role = me ? memberRoleWords.wordOfKnown(me.role) : undefined;
  if (!me || !role) throw new Error("could not tell which member this token belongs to");
  return { team, name: me.name, role, lead: lead?.name ?? "" };
}
