import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { LeaseMode } from "@team-protocols/contract/team/v1/enums_pb.js";
import { type Lease, LeaseSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import {
  AcquireLeaseResponseSchema,
  ListLeasesResponseSchema,
  ReleaseLeaseResponseSchema,
  RenewLeaseResponseSchema,
  type TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { leaseModeWords } from "@team-protocols/contract/words.js";
import { requireCaller } from "../caller.js";
import type { InboxHub } from "../inbox/hub.js";
import {
  acquireLease,
  type LeaseTtls,
  listLeases,
  releaseLease,
  renewLease,
} from "../protocols/leases.js";
import type { Database } from "../store/database.js";
import type { LeaseRow } from "../store/leases.js";

type LeasesImpl = Pick<
  ServiceImpl<typeof TeamService>,
  "acquireLease" | "renewLease" | "releaseLease" | "listLeases"
>;

export function toLease(l: LeaseRow): Lease {
  return create(LeaseSchema, {
    leaseId: l.leaseId,
    resource: l.resource,
    mode: leaseModeWords.valueOf(l.mode),
    holder: l.holder,
    reason: l.reason,
    acquiredAt: timestampFromDate(l.acquiredAt),
    expiresAt: timestampFromDate(l.expiresAt),
  });
}

/** AcquireLease, RenewLease, ReleaseLease, ListLeases (protocols/leases.ts decides). */
export function leaseHandlers(deps: {
  db: Database;
  hub: InboxHub;
  leaseTtls: LeaseTtls;
  /** 0: no limit. */
  maxLeasesPerMember: number;
}): LeasesImpl {
  const { db, hub, leaseTtls, maxLeasesPerMember } = deps;
  return {
    async acquireLease(req, ctx) {
      const caller = requireCaller(ctx.values);
      const mode = req.mode === LeaseMode.SHARED ? "shared" : "exclusive";
      const lease = await db.transaction((tx) =>
        acquireLease(
          tx,
          caller,
          { resource: req.resource, mode, ttlSeconds: req.ttlSeconds, reason: req.reason.trim() },
          leaseTtls,
          maxLeasesPerMember,
        ),
      );
      return create(AcquireLeaseResponseSchema, { lease: toLease(lease) });
    },

    async renewLease(req, ctx) {
      const caller = requireCaller(ctx.values);
      const lease = await db.transaction((tx) =>
        renewLease(tx, caller, { leaseId: req.leaseId, ttlSeconds: req.ttlSeconds }, leaseTtls),
      );
      return create(RenewLeaseResponseSchema, { lease: toLease(lease) });
    },

    async releaseLease(req, ctx) {
      const caller = requireCaller(ctx.values);
      const { lease, told } = await db.transaction((tx) =>
        releaseLease(tx, caller, { leaseId: req.leaseId, reason: req.reason }),
      );
      if (told) hub.wake([told.memberId]);
      return create(ReleaseLeaseResponseSchema, { lease: toLease(lease) });
    },

    async listLeases(req, ctx) {
      const caller = requireCaller(ctx.values);
      const leases = await listLeases(db, caller, { holder: req.holder, resource: req.resource });
      return create(ListLeasesResponseSchema, { leases: leases.map(toLease) });
    },
  };
}
