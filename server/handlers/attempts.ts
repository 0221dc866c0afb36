import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListAttemptsResponseSchema,
  type TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import { attemptOutcomeFromProto } from "../domain/enums.js";
import { seesWholeTeam } from "../domain/roles.js";
import { DomainError } from "../errors.js";
import { listAttempts } from "../store/attempts.js";
import type { Database } from "../store/database.js";
import { findMember } from "../store/members.js";
import { checkedByRules, toAttempt } from "./convert.js";
import { keysetPage, pageSize, pageTokenPosition } from "./page-token.js";

type AttemptsImpl = Pick<ServiceImpl<typeof TeamService>, "listAttempts">;

const PAGE = { page: 50, max: 500 };

/** ListAttempts: the protocol journal (interceptors/attempts-journal.ts writes it). */
export function attemptHandlers(deps: { db: Database }): AttemptsImpl {
  const { db } = deps;
  return {
    async listAttempts(req, ctx) {
      const caller = requireCaller(ctx.values);
      const outcome = checkedByRules(attemptOutcomeFromProto(req.outcome), "outcome");
      let memberId = seesWholeTeam(caller.role) ? undefined : caller.id;
      if (req.member !== "") {
        const member = await findMember(db, caller.teamId, req.member);
        if (!member) throw new DomainError("not-found", `no member "${req.member}" in this team`);
        // A teammate sees its own attempts only: naming another member is not a way in.
        if (!seesWholeTeam(caller.role) && member.id !== caller.id) {
          throw new DomainError(
            "permission-denied",
            `only the lead and observers see other members' attempts; you may list your own ("${caller.name}")`,
          );
        }
        memberId = member.id;
      }
      const size = pageSize(req.pageSize, PAGE);
      const rows = await listAttempts(db, {
        teamId: caller.teamId,
        memberId,
        outcome: outcome ?? undefined,
        requestId: req.requestId === "" ? undefined : req.requestId,
        beforeId: pageTokenPosition(req.pageToken),
        limit: size + 1,
      });
      const { page, nextPageToken } = keysetPage(rows, size, (a) => a.id);
      return create(ListAttemptsResponseSchema, { attempts: page.map(toAttempt), nextPageToken });
    },
  };
}
