import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import type { RequestStatus } from "../../gen/team/v1/enums_pb.js";
import type { Message } from "../../gen/team/v1/message_pb.js";
import type { Envelope, RequestRecord } from "../../gen/team/v1/records_pb.js";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import type { TeamClient } from "./harness.js";
import { waitFor } from "./wait.js";

type MessageInit = Parameters<TeamClient["send"]>[0]["message"];

export const text = (value: string): MessageInit => ({ kind: { case: "text", value } });

export const shutdownRequest = (reason = ""): MessageInit => ({
  kind: { case: "shutdownRequest", value: { reason } },
});

export const shutdownResponse = (
  requestId: string,
  approve: boolean,
  reason = "",
): MessageInit => ({
  kind: { case: "shutdownResponse", value: { requestId, approve, reason } },
});

export const planRequest = (plan: string): MessageInit => ({
  kind: { case: "planApprovalRequest", value: { plan } },
});

export const planResponse = (requestId: string, approve: boolean, feedback = ""): MessageInit => ({
  kind: { case: "planApprovalResponse", value: { requestId, approve, feedback } },
});

/** The refusal of a call that must fail: code, message, and its RuleViolation detail. */
export async function refused(call: () => Promise<unknown>) {
  const err = await call().then(
    () => undefined,
    (e) => ConnectError.from(e),
  );
  expect(err, "the call should have been refused").toBeInstanceOf(ConnectError);
  const e = err as ConnectError;
  return { code: e.code, message: e.rawMessage, detail: e.findDetails(RuleViolationSchema)[0] };
}

/** Everything in a member's inbox (after seq 0), without acking. */
export async function inbox(client: TeamClient): Promise<Envelope[]> {
  return (await client.readInbox({ afterSeq: 0n, limit: 1000 })).envelopes;
}

export const kindOf = (m: Message | undefined) => m?.kind.case;

/** A request record that must exist, as `client` sees it. */
export async function requestRecord(client: TeamClient, requestId: string): Promise<RequestRecord> {
  const r = (await client.getRequest({ requestId })).request;
  if (!r) throw new Error(`GetRequest ${requestId} returned no record`);
  return r;
}

/** Polls GetRequest until the record has `status` (or `withinMs` passes); returns the last read. */
export async function pollStatus(
  client: TeamClient,
  requestId: string,
  status: RequestStatus,
  withinMs = 10_000,
): Promise<RequestRecord> {
  let last: RequestRecord | undefined;
  const reached = async () => {
    last = await requestRecord(client, requestId);
    return last.status === status;
  };
  // The last read either way: the caller's expect() shows the status it stayed at.
  await waitFor(`request ${requestId} to reach status ${status}`, reached, {
    timeoutMs: withinMs,
    intervalMs: 50,
  }).catch(() => {});
  return last ?? requestRecord(client, requestId);
}

/** A Timestamp in whole microseconds (PostgreSQL's precision), exactly. */
export function micros(t: Timestamp | undefined): number {
  if (!t) throw new Error("timestamp missing");
  return Number(t.seconds) * 1_000_000 + Math.round(t.nanos / 1000);
}

/** expires_at - created_at of a request record is exactly its ttl (one clock reading). */
export function expectDeadline(r: RequestRecord, ttlMs: number): void {
  expect(micros(r.expiresAt) - micros(r.createdAt), `request ${r.requestId}`).toBe(ttlMs * 1000);
}

/** The request_update envelopes in a member's inbox about one request. */
export async function updatesAbout(client: TeamClient, requestId: string): Promise<Envelope[]> {
  return (await inbox(client)).filter(
    (e) => e.message?.kind.case === "requestUpdate" && e.requestId === requestId,
  );
}
