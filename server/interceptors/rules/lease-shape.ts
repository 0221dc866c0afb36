import { MAX_NOTE_BYTES } from "../../domain/limits.js";
import { nameViolation } from "./names.js";
import type { AnyRequest, Violation } from "./rule.js";

/**
 * size-shape for the lease RPCs: what PostgreSQL text cannot hold (U+0000) and what no lease
 * needs (a reason past a note's size, an id or a resource of any length) is refused here,
 * naming the field, before a query sees it. What makes a resource name one place is the
 * protocol's rule (lease-resource, domain/lease-patterns.ts).
 */
const MAX_LEASE_ID_CHARS = 128;
const MAX_RESOURCE_CHARS = 1024;

export function acquireLeaseShape(request: AnyRequest): Violation | undefined {
  return reasonViolation(request.reason);
}

export function renewLeaseShape(request: AnyRequest): Violation | undefined {
  return leaseIdViolation(request.leaseId);
}

export function releaseLeaseShape(request: AnyRequest): Violation | undefined {
  return leaseIdViolation(request.leaseId) ?? reasonViolation(request.reason);
}

export function listLeasesShape(request: AnyRequest): Violation | undefined {
  if (request.holder !== "") {
    const v = nameViolation(request.holder, "holder", "holder");
    if (v) return v;
  }
  const resource: string = request.resource;
  if ([...resource].length > MAX_RESOURCE_CHARS || /\p{Cc}/u.test(resource)) {
    return {
      sentence: `resource is longer than ${MAX_RESOURCE_CHARS} characters or holds a control character`,
      field: "resource",
    };
  }
  return undefined;
}

function leaseIdViolation(leaseId: string): Violation | undefined {
  if ([...leaseId].length <= MAX_LEASE_ID_CHARS && !/\p{Cc}/u.test(leaseId)) return undefined;
  return {
    sentence: `lease_id is not a lease id (longer than ${MAX_LEASE_ID_CHARS} characters, or a control character): use the lease_id AcquireLease returned`,
    field: "lease_id",
  };
}

function reasonViolation(reason: string): Violation | undefined {
  if (reason.includes("\u0000")) {
    return { sentence: "reason holds U+0000, which cannot be stored", field: "reason" };
  }
  if (Buffer.byteLength(reason) > MAX_NOTE_BYTES) {
    return { sentence: `reason is larger than ${MAX_NOTE_BYTES} bytes`, field: "reason" };
  }
  return undefined;
}
