import { expect, it } from "vitest";
import { RequestKind, RequestStatus, TaskState } from "../../gen/team/v1/enums_pb.js";
import { defaultProtocolConfig } from "../../server/protocols/protocol.js";
import { describeEachDatabase, type TeamClient } from "../support/harness.js";
import {
  expectDeadline,
  micros,
  pollStatus,
  refused,
  requestRecord,
  updatesAbout,
} from "../support/protocol-helpers.js";
import {
  assign,
  claimRequest,
  claimResponse,
  handoffRequest,
  handoffResponse,
  signoffRequest,
  signoffResponse,
  taskOf,
} from "../support/task-helpers.js";
import { waitFor } from "../support/wait.js";

/** Small per-kind defaults, different from each other and from the built-in ones. */
const CLAIM_MS = 1_100;
const HANDOFF_MS = 1_300;
const SIGNOFF_MS = 1_700;

/**
 * Deadlines of the task protocols: each kind's configured default (TASK_CLAIM_TTL_MS,
 * TASK_HANDOFF_TTL_MS, RESULT_SIGNOFF_TTL_MS), expiry by the sweeper with the requester told,
 * and what an expired request leaves of the task: a claim leaves it unowned (and claimable
 * again), a handoff or a sign-off leaves it with its owner.
 */
describeEachDatabase(
  "task protocols: deadlines and expiry of each kind",
  (env) => {
    it("each kind gets its configured default; at it the request expires, the requester is told, the task is as before", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      const bob = t.member("bob").client;
      await t.lead.send({ to: "alice", message: assign("owned") });
      const claim = await bob.send({ to: "team-lead", message: claimRequest("free") });
      const handoff = await alice.send({ to: "bob", message: handoffRequest("owned") });
      const signoff = await alice.send({ to: "team-lead", message: signoffRequest("owned") });

      const sent: [string, TeamClient, number, RequestKind][] = [
        [claim.requestId, bob, CLAIM_MS, RequestKind.TASK_CLAIM],
        [handoff.requestId, alice, HANDOFF_MS, RequestKind.TASK_HANDOFF],
        [signoff.requestId, alice, SIGNOFF_MS, RequestKind.RESULT_SIGNOFF],
      ];
      for (const [id, requester, ttlMs, kind] of sent) {
        const record = await requestRecord(t.lead, id);
        expect(record.kind).toBe(kind);
        expectDeadline(record, ttlMs);
        const expired = await pollStatus(t.lead, id, RequestStatus.EXPIRED);
        expect(expired.status).toBe(RequestStatus.EXPIRED);
        expect(micros(expired.resolvedAt)).toBe(micros(record.expiresAt));
        await waitFor(
          "the requester told of the expiry",
          async () => (await updatesAbout(requester, id)).length > 0,
        );
        expect((await updatesAbout(requester, id)).map((e) => e.message?.kind.value)).toEqual([
          expect.objectContaining({ kind, status: RequestStatus.EXPIRED }),
        ]);
      }

      // Answers after the deadline are refused; the tasks are where they were.
      const late = await refused(() =>
        t.lead.send({ to: "bob", message: claimResponse(claim.requestId, true) }),
      );
      expect(late.detail?.rule).toBe("once-only");
      expect(
        (
          await refused(() =>
            bob.send({ to: "alice", message: handoffResponse(handoff.requestId, true) }),
          )
        ).detail?.rule,
      ).toBe("once-only");
      expect(
        (
          await refused(() =>
            t.lead.send({ to: "alice", message: signoffResponse(signoff.requestId, true) }),
          )
        ).detail?.rule,
      ).toBe("once-only");
      expect(await taskOf(t.lead, "free")).toMatchObject({ state: TaskState.UNOWNED, owner: "" });
      expect(await taskOf(t.lead, "owned")).toMatchObject({
        state: TaskState.CLAIMED,
        owner: "alice",
      });
      // An expired claim no longer blocks the task (one-owner counts pending claims only).
      const again = await bob.send({ to: "team-lead", message: claimRequest("free") });
      expect((await requestRecord(t.lead, again.requestId)).status).toBe(RequestStatus.PENDING);
    });

    it("a ttl on the request overrides its kind's default; an assignment has no deadline to wait for", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      const asked = await alice.send({
        to: "team-lead",
        message: claimRequest("t1"),
        ttl: { seconds: 90n, nanos: 0 },
      });
      expectDeadline(await requestRecord(t.lead, asked.requestId), 90_000);
      const assigned = await t.lead.send({ to: "alice", message: assign("t2") });
      const record = await requestRecord(t.lead, assigned.requestId);
      expect(record.status).toBe(RequestStatus.APPROVED);
      expect(micros(record.expiresAt)).toBe(micros(record.createdAt));
    });
  },
  {
    sweepIntervalMs: 50,
    protocols: {
      defaultTtlMs: {
        ...defaultProtocolConfig.defaultTtlMs,
        task_claim: CLAIM_MS,
        task_handoff: HANDOFF_MS,
        result_signoff: SIGNOFF_MS,
      },
    },
  },
);
