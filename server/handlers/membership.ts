import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { MemberRole, PermissionMode } from "@team-protocols/contract/team/v1/enums_pb.js";
import {
  AddMemberResponseSchema,
  CreateTeamResponseSchema,
  DeleteTeamResponseSchema,
  ListMembersResponseSchema,
  RemoveMemberResponseSchema,
  RotateTokenResponseSchema,
  type TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import { permissionModeFromProto } from "../domain/enums.js";
import { DomainError } from "../errors.js";
import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { stopMemberAndRelease } from "../protocols/member-stop.js";
import type { Database } from "../store/database.js";
import {
  addMember,
  createTeam,
  deleteTeamRows,
  findMember,
  listMembers,
  replaceToken,
  stopMember,
} from "../store/members.js";
import type { PresenceWindows } from "../store/presence.js";
import { generateToken, hashToken } from "../tokens.js";
import { checkedByRules, toMember } from "./convert.js";

export const DEFAULT_LEAD_NAME = "team-lead";

type MembershipImpl = Pick<
  ServiceImpl<typeof TeamService>,
  "createTeam" | "addMember" | "removeMember" | "listMembers" | "rotateToken" | "deleteTeam"
>;

function requireLead(caller: { role: string; name: string }, action: string): void {
  if (caller.role !== "lead") {
    throw new DomainError("permission-denied", `only the team lead may ${action}`);
  }
}

/** CreateTeam, AddMember, RemoveMember, ListMembers, RotateToken, DeleteTeam. */
export function membershipHandlers(deps: {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  teams: TeamHub;
  /** Teams the database may hold, when CreateTeam is open (no admin token); 0: no ceiling. */
  maxTeams?: number;
  /** Active observers one team may have; 0: no limit. */
  maxObservers?: number;
  /** The windows ListMembers computes presence with. */
  presence: PresenceWindows;
}): MembershipImpl {
  const { db, hub, waiters, teams } = deps;
  return {
    async createTeam(req) {
      const mode = checkedByRules(
        permissionModeFromProto(req.leadPermissionMode),
        "lead_permission_mode",
      );
      const token = generateToken();
      const lead = await createTeam(
        db,
        req.team,
        {
          name: req.leadName || DEFAULT_LEAD_NAME,
          tokenHash: hashToken(token),
          permissionMode: mode,
        },
        deps.maxTeams ?? 0,
      );
      return create(CreateTeamResponseSchema, { token, lead: toMember(lead) });
    },

    async addMember(req, ctx) {
      const caller = requireCaller(ctx.values);
      requireLead(caller, "add members");
      // Unset: the lead's own mode, so a teammate of a `plan` team starts by planning.
      const mode =
        req.permissionMode === PermissionMode.UNSPECIFIED
          ? caller.lead.permissionMode
          : checkedByRules(permissionModeFromProto(req.permissionMode), "permission_mode");
      const role = addedRole(req.role);
      const token = generateToken();
      const member = await addMember(
        db,
        caller.teamId,
        req.name,
        hashToken(token),
        mode,
        role,
        deps.maxObservers ?? 0,
      );
      teams.wake([caller.teamId]);
      return create(AddMemberResponseSchema, { token, member: toMember(member) });
    },

    async removeMember(req, ctx) {
      const caller = requireCaller(ctx.values);
      requireLead(caller, "remove members");
      const { stopped: member, aftermath: canceled } = await db.transaction(async (tx) => {
        const stop = () => stopMember(tx, caller.teamId, req.name);
        const target = await findMember(tx, caller.teamId, req.name);
        if (!target)
          return { stopped: await stop(), aftermath: { requestIds: [], deliveries: [] } };
        // Its pending requests canceled, its tasks back to unowned (the lead is told).
        return stopMemberAndRelease(tx, {
          teamId: caller.teamId,
          member: target,
          lead: caller.lead,
          actorId: caller.id,
          why: "was removed by the lead",
          stop,
        });
      });
      hub.wake(canceled.deliveries.map((d) => d.memberId));
      teams.wake([caller.teamId]);
      for (const id of canceled.requestIds) waiters.notify(id);
      hub.endMember(
        member.id,
        new DomainError("unauthenticated", `member "${member.name}" was removed by the lead`),
      );
      return create(RemoveMemberResponseSchema, { member: toMember(member) });
    },

    async rotateToken(req, ctx) {
      const caller = requireCaller(ctx.values);
      const name = req.member || caller.name;
      if (name !== caller.name) requireLead(caller, "rotate another member's token");
      const token = generateToken();
      const member = await replaceToken(db, caller.teamId, name, hashToken(token));
      if (!member) throw new DomainError("not-found", `no active member "${name}" in this team`);
      // The old token's streams end, and every process forgets its cached caller (the
      // cluster bus carries this to the other servers, as for RemoveMember).
      hub.endMember(
        member.id,
        new DomainError("unauthenticated", `the token of "${member.name}" was replaced`),
      );
      return create(RotateTokenResponseSchema, { token, member: toMember(member) });
    },

    async deleteTeam(req, ctx) {
      const caller = requireCaller(ctx.values);
      requireLead(caller, "delete the team");
      if (req.team !== caller.teamName)
        throw new DomainError(
          "failed-precondition",
          `team: repeat this team's name ("${caller.teamName}") to confirm deleting it`,
        );
      const ids = await db.transaction((tx) => deleteTeamRows(tx, caller.teamId));
      const gone = new DomainError("unauthenticated", `team "${caller.teamName}" was deleted`);
      for (const id of ids) hub.endMember(id, gone);
      teams.wake([caller.teamId]);
      return create(DeleteTeamResponseSchema, { membersRemoved: ids.length });
    },

    async listMembers(_req, ctx) {
      const caller = requireCaller(ctx.values);
      const members = await listMembers(
        db,
        { id: caller.teamId, name: caller.teamName },
        deps.presence,
      );
      return create(ListMembersResponseSchema, {
        members: members.map(toMember),
        you: caller.name,
        team: caller.teamName,
      });
    },
  };
}

/**
 * AddMember's role: a teammate (unset), an observer or an approver; a team has its one lead
 * already. A role outside the enum never gets here (rules/enum-values.ts).
 */
function addedRole(role: MemberRole): "teammate" | "observer" | "approver" {
  if (role === MemberRole.OBSERVER) return "observer";
  if (role === MemberRole.APPROVER) return "approver";
  if (role === MemberRole.UNSPECIFIED || role === MemberRole.TEAMMATE) return "teammate";
  throw new DomainError(
    "invalid-argument",
    "role: a team has one lead; add a teammate, an observer or an approver",
  );
}
