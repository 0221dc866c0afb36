import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  AwaitRequestResponseSchema,
  CancelRequestResponseSchema,
  GetRequestResponseSchema,
  ListRequestsResponseSchema,
  type TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, requireCaller } from "../caller.js";
import { requestKindFromProto, requestStatusFromProto } from "../domain/enums.js";
import { seesWholeTeam } from "../domain/roles.js";
import { DomainError } from "../errors.js";
import type { InboxHub } from "../inbox/hub.js";
import type { RequestWaiters } from "../inbox/request-waiters.js";
import type { TeamHub } from "../inbox/team-hub.js";
import { cancelRequest } from "../protocols/cancel.js";
import type { Database } from "../store/database.js";
import { findMember } from "../store/members.js";
import { findRequest, listRequests, type RequestRow } from "../store/requests.js";
import { checkedByRules, toRequestRecord } from "./convert.js";
import { keysetPage, pageSize, pageTokenPosition } from "./page-token.js";

type RequestsImpl = Pick<
  ServiceImpl<typeof TeamService>,
  "getRequest" | "listRequests" | "awaitRequest" | "cancelRequest"
>;

const PAGE = { page: 50, max: 500 };
const DEFAULT_AWAIT_MS = 60_000;
const MAX_AWAIT_MS = 15 * 60_000;
/**
 * AwaitRequest answers this long before the caller's deadline, so that the answer arrives
 * in time: a tenth of the time left, within 100 ms..1 s (a small fixed margin was eaten
 * by event-loop lag on a busy machine, and the caller got DeadlineExceeded instead).
 */
const deadlineMargin = (timeLeftMs: number) => Math.min(1_000, Math.max(100, timeLeftMs / 10));

const isParty = (caller: Caller, r: RequestRow) =>
  seesWholeTeam(caller.role) || r.fromId === caller.id || r.toId === caller.id;

/** A request of the caller's team that the caller may see (a party, or the lead). */
async function visibleRequest(db: Database, caller: Caller, id: string): Promise<RequestRow> {
  const request = await findRequest(db, caller.teamId, id);
  if (!request) throw new DomainError("not-found", `no request ${id} in this team`);
  if (!isParty(caller, request)) {
    throw new DomainError(
      "permission-denied",
      `request ${id} is between "${request.fromName}" and "${request.toName}"; only they, the lead and observers may see it`,
    );
  }
  return request;
}

/** GetRequest, ListRequests, AwaitRequest, CancelRequest. */
export function requestHandlers(deps: {
  db: Database;
  hub: InboxHub;
  waiters: RequestWaiters;
  teams: TeamHub;
}): RequestsImpl {
  const { db, hub, waiters, teams } = deps;
  return {
    async getRequest(req, ctx) {
      const caller = requireCaller(ctx.values);
      const request = await visibleRequest(db, caller, req.requestId);
      return create(GetRequestResponseSchema, { request: toRequestRecord(request) });
    },

    async listRequests(req, ctx) {
      const caller = requireCaller(ctx.values);
      const status = checkedByRules(requestStatusFromProto(req.status), "status");
      const kind = checkedByRules(requestKindFromProto(req.kind), "kind");
      let partyId: number | undefined;
      if (req.party !== "") {
        const party = await findMember(db, caller.teamId, req.party);
        if (!party) throw new DomainError("not-found", `no member "${req.party}" in this team`);
        partyId = party.id;
      }
      const beforePosition = pageTokenPosition(req.pageToken);
      const size = pageSize(req.pageSize, PAGE);
      const rows = await listRequests(db, {
        teamId: caller.teamId,
        // The lead and observers see the team's requests; teammates those they are party to.
        partyId: seesWholeTeam(caller.role) ? partyId : caller.id,
        alsoPartyId: seesWholeTeam(caller.role) ? undefined : partyId,
        status: status ?? undefined,
        kind: kind ?? undefined,
        beforePosition,
        limit: size + 1,
      });
      const { page, nextPageToken } = keysetPage(rows, size, (r) => r.position);
      return create(ListRequestsResponseSchema, {
        requests: page.map(toRequestRecord),
        nextPageToken,
      });
    },

    async awaitRequest(req, ctx) {
      const caller = requireCaller(ctx.values);
      const asked = req.timeout
        ? Number(req.timeout.seconds) * 1000 + Math.floor(req.timeout.nanos / 1e6)
        : DEFAULT_AWAIT_MS;
      // A negative timeout is refused by the rules table (size-shape).
      const callDeadline = ctx.timeoutMs();
      const budget = Math.min(
        asked,
        MAX_AWAIT_MS,
        callDeadline === undefined
          ? Number.POSITIVE_INFINITY
          : callDeadline - deadlineMargin(callDeadline),
      );
      const until = Date.now() + Math.max(0, budget);
      for (;;) {
        const request = await visibleRequest(db, caller, req.requestId);
        const left = until - Date.now();
        if (request.status !== "pending" || left <= 0 || ctx.signal.aborted || waiters.closed) {
          return create(AwaitRequestResponseSchema, { request: toRequestRecord(request) });
        }
        // Wake on a transition (in this process or, through the cluster bus, another one),
        // at the request's deadline (the record then reads as expired), or at the call's.
        const untilExpiry = request.expiresAt.getTime() - Date.now() + 5;
        await waiters.wait(request.id, Math.max(1, Math.min(left, untilExpiry)), ctx.signal);
      }
    },

    async cancelRequest(req, ctx) {
      const caller = requireCaller(ctx.values);
      const { request, delivery } = await cancelRequest(db, {
        teamId: caller.teamId,
        requestId: req.requestId,
        callerId: caller.id,
      });
      if (delivery) hub.wake([delivery.memberId]);
      teams.wake([caller.teamId]);
      waiters.notify(request.id);
      return create(CancelRequestResponseSchema, { request: toRequestRecord(request) });
    },
  };
}
