import { Code } from "@connectrpc/connect";
import { MemberRole, MemberStatus } from "../../gen/team/v1/enums_pb.js";
import type { Member } from "../../gen/team/v1/records_pb.js";
import type { TeamClient } from "../team-client.js";
import { TeamError } from "../team-error.js";

export interface Identity {
  name: string;
  role: "lead" | "teammate";
  /** The lead's name: answers, plans and reports go to it. */
  lead: string;
}

/**
 * Who a token belongs to. The service has no "who am I" call; ListAttempts filtered by a
 * member is allowed for the lead (any member) and for a member naming itself only, so
 * read-only probes find the caller: the lead's name first, then each active teammate's.
 */
export async function whoAmI(client: TeamClient): Promise<Identity> {
  const members = await client.members();
  const lead = members.find((m) => m.role === MemberRole.LEAD);
  const probe = async (m: Member) => {
    try {
      await client.listAttempts({ member: m.name, pageSize: 1 });
      return true;
    } catch (err) {
      if (TeamError.fromError(err).code === Code.PermissionDenied) return false;
      throw err;
    }
  };
  if (lead && (await probe(lead))) return { name: lead.name, role: "lead", lead: lead.name };
  for (const m of members) {
    if (m.role === MemberRole.TEAMMATE && m.status === MemberStatus.ACTIVE && (await probe(m))) {
      return { name: m.name, role: "teammate", lead: lead?.name ?? "" };
    }
  }
  throw new Error("could not tell which member this token belongs to");
}
