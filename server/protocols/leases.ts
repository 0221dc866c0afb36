import { randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import type { Caller } from "../caller.js";
import {
  type LeaseMode,
  LeaseResourceError,
  leasesConflict,
  parseLeaseResource,
  resourcesOverlap,
} from "../domain/lease-patterns.js";
import { DomainError, LimitError, RuleViolationError } from "../errors.js";
import { recordAttempt } from "../store/attempts.js";
import type { Queryable } from "../store/database.js";
import {
  deleteLease,
  extendLease,
  findLiveLease,
  insertLease,
  type LeaseRow,
  liveLeases,
  lockTeamLeases,
  sweepExpiredLeases,
} from "../store/leases.js";
import { findMember } from "../store/members.js";
import { appendToInboxes, type Delivery } from "../store/send.js";

/** How long a lease lasts when the caller does not say, and at most. */
export interface LeaseTtls {
  defaultMs: number;
  maxMs: number;
}

export const DEFAULT_LEASE_TTLS: LeaseTtls = { defaultMs: 10 * 60_000, maxMs: 4 * 3_600_000 };

/**
 * Live leases one member may hold (MAX_LEASES_PER_MEMBER): every acquire compares its pattern
 * with each live lease of the team, so one token holding thousands of worst-case globs would
 * make every later acquire and ListLeases filter slow for the whole team.
 */
export const DEFAULT_MAX_LEASES_PER_MEMBER = 64;

/** A lease id: "lease_" and 96 random bits. */
const newLeaseId = () => `lease_${randomBytes(12).toString("base64url")}`;

function ttlOf(ttlSeconds: number, ttls: LeaseTtls): number {
  if (ttlSeconds === 0) return ttls.defaultMs;
  const ms = ttlSeconds * 1000;
  if (ms > ttls.maxMs) {
    throw new RuleViolationError(
      "lease-ttl",
      "invalid-argument",
      `ttl_seconds ${ttlSeconds} is more than this server's maximum of ${ttls.maxMs / 1000} s (LEASE_TTL_MAX_S): renew it instead`,
      "ttl_seconds",
    );
  }
  return ms;
}

function resourceOf(text: string, field = "resource") {
  try {
    return parseLeaseResource(text);
  } catch (err) {
    // Stryker disable next-line ConditionalExpression: parseLeaseResource throws nothing but a LeaseResourceError (plain string tests), so the rethrow is never reached
    if (!(err instanceof LeaseResourceError)) throw err;
    throw new RuleViolationError(
      "lease-resource",
      "invalid-argument",
      `the resource ${JSON.stringify(text.slice(0, 80))} ${err.message}; give a path glob relative to the repository (src/parser/**) or kind:name (task:parser)`,
      field,
    );
  }
}

/** The refusal of an acquire that meets another member's lease. */
function held(wanted: string, mode: LeaseMode, other: LeaseRow): RuleViolationError {
  return new RuleViolationError(
    "lease-held",
    "failed-precondition",
    `${other.holder} holds ${other.mode === "exclusive" ? "an exclusive" : "a shared"} lease on ${JSON.stringify(other.resource)} ` +
      `(until ${other.expiresAt.toISOString()}${other.reason ? `: ${other.reason}` : ""}), which overlaps ${JSON.stringify(wanted)}` +
      `${mode === "shared" ? " and is exclusive" : ""}; ask ${other.holder} to release it (send_message), or wait until it expires`,
  );
}

/**
 * AcquireLease, inside one transaction: the team's lease lock first (store/leases.ts), then
 * the live leases are read and checked against the wanted one, so two overlapping acquires
 * cannot both pass, nor two acquires of one member both take its last place under
 * `maxPerMember` (0: no limit). A member's own leases never conflict with each other.
 */
export async function acquireLease(
  tx: Queryable,
  caller: Caller,
  req: { resource: string; mode: LeaseMode; ttlSeconds: number; reason: string },
  ttls: LeaseTtls,
  maxPerMember = DEFAULT_MAX_LEASES_PER_MEMBER,
): Promise<LeaseRow> {
  const resource = resourceOf(req.resource);
  const ttlMs = ttlOf(req.ttlSeconds, ttls);
  await lockTeamLeases(tx, caller.teamId);
  const live = await liveLeases(tx, caller.teamId);
  // Counted before any pattern is compared: the cap is what bounds that comparison.
  const mine = live.filter((l) => l.holderId === caller.id).length;
  if (maxPerMember > 0 && mine >= maxPerMember) {
    throw new LimitError(
      "leases-per-member",
      `member ${JSON.stringify(caller.name)} already holds ${mine} live leases (MAX_LEASES_PER_MEMBER ${maxPerMember}); ` +
        "release one (ReleaseLease) or renew one you hold instead of acquiring another",
    );
  }
  for (const other of live) {
    if (other.holderId === caller.id) continue;
    const theirs = { resource: resourceOf(other.resource), mode: other.mode };
    if (leasesConflict({ resource, mode: req.mode }, theirs)) {
      throw held(req.resource, req.mode, other);
    }
  }
  return insertLease(tx, {
    leaseId: newLeaseId(),
    teamId: caller.teamId,
    holderId: caller.id,
    resource: req.resource,
    mode: req.mode,
    reason: req.reason,
    ttlMs,
  });
}

async function ownLease(tx: Queryable, caller: Caller, leaseId: string): Promise<LeaseRow> {
  const lease = await findLiveLease(tx, caller.teamId, leaseId);
  if (!lease) {
    throw new DomainError(
      "not-found",
      `no live lease ${JSON.stringify(leaseId)} in this team (released, expired, or never taken): ListLeases shows the live ones`,
    );
  }
  return lease;
}

/** RenewLease: the holder only. */
export async function renewLease(
  tx: Queryable,
  caller: Caller,
  req: { leaseId: string; ttlSeconds: number },
  ttls: LeaseTtls,
): Promise<LeaseRow> {
  const ttlMs = ttlOf(req.ttlSeconds, ttls);
  const lease = await ownLease(tx, caller, req.leaseId);
  if (lease.holderId !== caller.id) {
    throw new RuleViolationError(
      "lease-holder-only",
      "permission-denied",
      `lease ${req.leaseId} is ${lease.holder}'s: only its holder renews it`,
    );
  }
  return { ...lease, expiresAt: await extendLease(tx, lease.leaseId, ttlMs) };
}

/**
 * ReleaseLease: the holder gives it back; the lead may break another member's, with a
 * reason the holder is told in a message from the server (from "").
 */
export async function releaseLease(
  tx: Queryable,
  caller: Caller,
  req: { leaseId: string; reason: string },
): Promise<{ lease: LeaseRow; told?: Delivery }> {
  const lease = await ownLease(tx, caller, req.leaseId);
  if (lease.holderId === caller.id) {
    await deleteLease(tx, lease.leaseId);
    return { lease };
  }
  if (caller.role !== "lead") {
    throw new RuleViolationError(
      "lease-holder-only",
      "permission-denied",
      `lease ${req.leaseId} is ${lease.holder}'s: only its holder releases it (the lead may break it)`,
    );
  }
  if (req.reason.trim() === "") {
    throw new RuleViolationError(
      "reason-on-reject",
      "invalid-argument",
      `breaking ${lease.holder}'s lease needs a reason: it is told to ${lease.holder}`,
      "reason",
    );
  }
  await deleteLease(tx, lease.leaseId);
  // A break is a protocol step of the lead's: journaled with its effect, in its transaction
  // (a refused break is journaled by interceptors/attempts-journal.ts).
  await recordAttempt(tx, {
    teamId: caller.teamId,
    memberId: caller.id,
    action: "break_lease",
    to: lease.holder,
    requestId: lease.leaseId,
    outcome: "accepted",
  });
  const holder = await findMember(tx, caller.teamId, lease.holder);
  // Stryker disable next-line OptionalChaining: a lease's holder is a member (the lease row joins it) and members are never deleted, only stopped: holder is never undefined
  if (holder?.status !== "active") return { lease };
  const told = await tellHolder(
    tx,
    lease,
    `The lead broke your ${lease.mode} lease ${lease.leaseId} on ${JSON.stringify(lease.resource)}: ${req.reason}. Acquire it again before you edit it.`,
  );
  return { lease, ...(told ? { told } : {}) };
}

/** A text from the server (from "") to a lease's holder. */
async function tellHolder(tx: Queryable, lease: LeaseRow, text: string) {
  const body = toBinary(
    MessageSchema,
    create(MessageSchema, { kind: { case: "text", value: text } }),
  );
  const [told] = await appendToInboxes(
    tx,
    { teamId: lease.teamId, senderId: null, fromName: "", to: lease.holder, kind: "text", body },
    [{ id: lease.holderId, name: lease.holder }],
  );
  return told;
}

/**
 * Deletes up to `limit` lapsed leases (the sweeper, each tick) and tells each active holder
 * that its lease is gone; returns the deliveries to wake. A lapsed lease already held
 * nothing: this only tidies and tells.
 */
export async function expireLeases(tx: Queryable, limit: number): Promise<Delivery[]> {
  // Stryker disable next-line ArrayDeclaration: a junk first element only adds an undefined member id to the sweeper's hub.wake, which wakes nobody for it
  const told: Delivery[] = [];
  for (const lease of await sweepExpiredLeases(tx, limit)) {
    const holder = await findMember(tx, lease.teamId, lease.holder);
    // Stryker disable next-line OptionalChaining: a lease's holder is a member (the lease row joins it) and members are never deleted: holder is never undefined
    if (holder?.status !== "active") continue;
    const delivery = await tellHolder(
      tx,
      lease,
      `Your ${lease.mode} lease ${lease.leaseId} on ${JSON.stringify(lease.resource)} expired at ${lease.expiresAt.toISOString()}: acquire it again (AcquireLease) before you edit it.`,
    );
    // Stryker disable next-line ConditionalExpression: one active recipient given to appendToInboxes always gets its one delivery
    if (delivery) told.push(delivery);
  }
  return told;
}

/** ListLeases: the team's live leases, filtered by holder and by a resource they overlap. */
export async function listLeases(
  db: Queryable,
  caller: Caller,
  req: { holder: string; resource: string },
): Promise<LeaseRow[]> {
  const filter = req.resource === "" ? undefined : resourceOf(req.resource);
  const leases = await liveLeases(db, caller.teamId);
  return leases.filter(
    (l) =>
      (req.holder === "" || l.holder === req.holder) &&
      (!filter || resourcesOverlap(filter, resourceOf(l.resource))),
  );
}
