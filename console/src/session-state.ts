import { MemberRole } from "@team-protocols/contract/team/v1/enums_pb.js";
import { createTeamRpc, type TeamRpc } from "./rpc.js";

/** A signed-in member: its client, and who the server says it is. */
export interface Session {
  rpc: TeamRpc;
  /** The member's name (ListMembers' `you`). */
  you: string;
  role: MemberRole;
  /** The team's name (ListMembers' `team`). */
  team: string;
}

/**
 * Signs in with a token: the server says whose it is (ListMembers answers any member, and
 * names the caller). Throws the server's refusal (a wrong or revoked token:
 * Unauthenticated).
 */
export async function signIn(token: string): Promise<Session> {
  const rpc = createTeamRpc(token);
  const { members, you, team } = await rpc.listMembers({});
  const me = members.find((m) => m.name === you);
  return { rpc, you, role: me?.role ?? MemberRole.UNSPECIFIED, team };
}

/** What a member may do from the console; the server enforces it, the page only follows. */
export const mayWrite = (s: Session) => s.role !== MemberRole.OBSERVER;
export const isLead = (s: Session) => s.role === MemberRole.LEAD;
/** WatchTeam is for the lead and observers; a teammate or an approver sees its own inbox. */
export const mayWatch = (s: Session) =>
  s.role === MemberRole.LEAD || s.role === MemberRole.OBSERVER;
/** An approver answers the lead's approvals for it (plans, permissions, claims, sign-offs). */
export const isApprover = (s: Session) => s.role === MemberRole.APPROVER;
