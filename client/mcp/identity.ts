import type { TeamClient } from "@team-protocols/client/team-client.js";
import { MemberRole } from "@team-protocols/contract/team/v1/enums_pb.js";

export interface Identity {
  name: string;
  role: "lead" | "teammate" | "observer";
  /** The lead's name: answers, plans and reports go to it. */
  lead: string;
}

const roles: Partial<Record<MemberRole, Identity["role"]>> = {
  [MemberRole.LEAD]: "lead",
  [MemberRole.TEAMMATE]: "teammate",
  [MemberRole.OBSERVER]: "observer",
};

/** Who a token belongs to: ListMembers names the caller (`you`), and the list has its role. */
export async function whoAmI(client: TeamClient): Promise<Identity> {
  const { members, you } = await client.rpc.listMembers({});
  const lead = members.find((m) => m.role === MemberRole.LEAD);
  const me = members.find((m) => m.name === you);
  const role = me ? roles[me.role] : undefined;
  if (!me || !role) throw new Error("could not tell which member this token belongs to");
  return { name: me.name, role, lead: lead?.name ?? "" };
}
