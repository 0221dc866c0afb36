import { MemberRole } from "@team-protocols/contract/team/v1/enums_pb.js";
import { createTeamRpc, type TeamRpc } from "./rpc.js";

/** A signed-in member: its client, and who the server says it is. */
export interface Session {
  rpc: TeamRpc;
  /** The member's name (ListMembers' `you`). */
  you: string;
  role: MemberRole;
}

/**
 * Signs in with a token: the server says whose it is (ListMembers answers any member, and
 * names the caller). Throws the server's refusal (a wrong or revoked token:
 * Unauthenticated).
 */
export async function signIn(token: string): Promise<Session> {
  const rpc = createTeamRpc(token);
  const { members, you } = await rpc.listMembers({});
  const me = members.find((m) => m.name === you);
  return { rpc, you, role: me?.role ?? MemberRole.UNSPECIFIED };
}

/** What a member may do from the console; the server enforces it, the page only follows. */
export const mayWrite = (s: Session) => s.role !== MemberRole.OBSERVER;
export const isLead = (s: Session) => s.role === MemberRole.LEAD;
/** An approver answers the lead's approvals for it (plans, permissions, claims, sign-offs). */
export const isApprover = (s: Session) => s.role === MemberRole.APPROVER;
