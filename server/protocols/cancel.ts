import { RuleViolationError } from "../errors.js";
import { recordAttempt } from "../store/attempts.js";
import type { Database, Queryable } from "../store/database.js";
import {
  findRequest,
  finishRequest,
  loadRequest,
  lockPendingRequestsOf,
  type RequestRow,
} from "../store/requests.js";
import { type Delivery, deletedCaller, revokedSender } from "../store/send.js";
import { deliverRequestUpdate } from "./request-updates.js";

/**
 * CancelRequest: the requester withdraws a pending request. Only the requester may
 * (requester-only); only while pending (once-only). The addressee is told with a
 * request_update, so it does not answer a request nobody waits for any more.
 */
export async function cancelRequest(
  db: Database,
  q: { teamId: number; requestId: string; callerId: number },
): Promise<{ request: RequestRow; delivery: Delivery | undefined }> {
  return db.transaction(async (tx) => {
    // As a send does: a token revoked on another server process a moment ago may still be in
    // this one's caller cache (interceptors/caller-cache.ts); a stopped member cancels nothing.
    const [caller] = await tx.query<{ name: string; status: string }>(
      "SELECT name, status FROM members WHERE id = $1",
      [q.callerId],
    );
    if (!caller) throw deletedCaller();
    if (caller.status !== "active") throw revokedSender(caller.name);
    const request = await findRequest(tx, q.teamId, q.requestId, { lock: true });
    if (!request) {
      throw new RuleViolationError(
        "unknown-request",
        "not-found",
        `no request ${q.requestId} in this team`,
        "request_id",
      );
    }
    if (request.fromId !== q.callerId) {
      throw new RuleViolationError(
        "requester-only",
        "permission-denied",
        `only "${request.fromName}", who sent request ${q.requestId}, may cancel it`,
        "request_id",
      );
    }
    // The status test only spares a statement: finishRequest moves nothing but a pending
    // request before its deadline, so with it made `false` the refusal is the same (an
    // equivalent mutant, left to run with its killed `true` twin on this line).
    if (request.status !== "pending" || !(await finishRequest(tx, request.id, "canceled", null))) {
      throw new RuleViolationError(
        "once-only",
        "failed-precondition",
        `request ${q.requestId} is already ${request.status === "pending" ? "expired" : request.status}; only a pending request can be canceled`,
        "request_id",
      );
    }
    const delivery = await deliverRequestUpdate(
      tx,
      request,
      "canceled",
      // Stryker disable next-line StringLiteral: equivalent; deliverRequestUpdate reads any word but "requester" as the addressee
      "addressee",
      `"${request.fromName}" canceled request ${request.id}; no answer is needed`,
    );
    await recordAttempt(tx, {
      teamId: q.teamId,
      memberId: q.callerId,
      action: "cancel_request",
      requestId: request.id,
      outcome: "accepted",
    });
    return { request: await loadRequest(tx, q.teamId, request.id), delivery };
  });
}

/**
 * When a member stops (removed by the lead, or its shutdown approved), its pending requests
 * can no longer be answered or awaited by it: they are canceled, and the other party of each
 * is told with a request_update. Runs inside the stopping transaction, before the member row
 * is changed (lock order: requests, then members, then inboxes).
 */
export async function cancelRequestsOfStoppingMember(
  tx: Queryable,
  member: { id: number; name: string },
  why: string,
): Promise<{ requestIds: string[]; deliveries: Delivery[] }> {
  // Stryker disable next-line ArrayDeclaration: a junk first id is only given to waiters.notify after commit, and no AwaitRequest waits on it
  const requestIds: string[] = [];
  // Stryker disable next-line ArrayDeclaration: a junk first delivery only adds an undefined member id to hub.wake, which wakes nobody for it
  const deliveries: Delivery[] = [];
  for (const request of await lockPendingRequestsOf(tx, member.id)) {
    // Past its deadline: the sweeper expires it. The status test only spares a statement
    // (finishRequest below moves no request past its deadline), so made `false` it is an
    // equivalent mutant; its `true` twin, which cancels nothing, is killed.
    if (request.status !== "pending") continue;
    if (!(await finishRequest(tx, request.id, "canceled", null))) continue;
    requestIds.push(request.id);
    const delivery = await deliverRequestUpdate(
      tx,
      request,
      "canceled",
      // "addressee" made "" is equivalent (deliverRequestUpdate reads any word but
      // "requester" as the addressee); "requester" made "" is killed.
      request.fromId === member.id ? "addressee" : "requester",
      `request ${request.id} was canceled: "${member.name}" ${why}`,
    );
    // Always true here: the other party of a pending request is active (a member's stop
    // cancels its pending requests first), so `true` is equivalent; `false` is killed (an
    // open Subscribe of that party must hear the update live).
    if (delivery) deliveries.push(delivery);
  }
  return { requestIds, deliveries };
}
