import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { MemberStatus } from "../../gen/team/v1/enums_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import {
  describeEachDatabase,
  type TeamClient,
  type TestEnv,
  uniqueName,
} from "../support/harness.js";
import { subscribedBeyond } from "../support/subscribed.js";

const text = (t: string) => ({ kind: { case: "text" as const, value: t } });

/** Calls any TeamService method with an empty request; returns the error, if any. */
async function callEmpty(
  client: TeamClient,
  method: DescMethod,
): Promise<ConnectError | undefined> {
  const fn = (client as unknown as Record<string, (req: unknown) => unknown>)[method.localName];
  try {
    const input = create(method.input);
    // A client stream (ImportTeam) gets the empty request as its one message.
    const result = fn?.call(
      client,
      method.methodKind === "client_streaming"
        ? (async function* () {
            yield input;
          })()
        : input,
    );
    if (method.methodKind === "server_streaming") {
      for await (const _ of result as AsyncIterable<unknown>) break;
    } else {
      await result;
    }
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

// CreateTeam and ImportTeam make a new team: open here (the admin token's when one is set).
const memberMethods = TeamService.methods.filter(
  (m) => m.name !== "CreateTeam" && m.name !== "ImportTeam",
);

async function expectUnauthenticated(client: TeamClient, pattern: RegExp) {
  for (const method of memberMethods) {
    const err = await callEmpty(client, method);
    expect(err?.code, `${method.name}`).toBe(Code.Unauthenticated);
    expect(err?.rawMessage, `${method.name}`).toMatch(pattern);
  }
}

describeEachDatabase(
  "identity",
  (env) => {
    it("refuses a call without a token on every member RPC", async () => {
      await expectUnauthenticated(env().client(), /missing credentials/);
    });

    it("refuses a malformed token on every member RPC", async () => {
      await expectUnauthenticated(env().client("not-a-token"), /malformed token/);
    });

    it("refuses a well-formed but unknown token on every member RPC", async () => {
      await expectUnauthenticated(env().client(`tp_${"A".repeat(43)}`), /unknown token/);
    });

    it("refuses a removed member's token on every member RPC", async () => {
      const t = await env().team("alice");
      await t.lead.removeMember({ name: "alice" });
      await expectUnauthenticated(t.member("alice").client, /token revoked/);
    });

    it("refuses an Authorization header that is not a bearer token", async () => {
      const t = await env().team();
      const client = env().client();
      const err = await client
        .listMembers({}, { headers: { authorization: `Basic ${t.leadToken}` } })
        .catch((e) => ConnectError.from(e));
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    });

    it("keeps teams apart: a member of one team can neither reach nor read another team's inboxes", async () => {
      const a = await env().team("alice");
      const b = await env().team("alice");
      await a.lead.send({ to: "alice", message: text("for team a") });
      await b.lead.send({ to: "alice", message: text("for team b") });
      // Same member name in both teams: each token reads only its own team's inbox.
      const readA = await a.member("alice").client.readInbox({});
      expect(readA.envelopes.map((e) => [e.team, e.message?.kind.value])).toEqual([
        [a.name, "for team a"],
      ]);
      // Names resolve within the caller's team only: b's lead cannot address a's members.
      const onlyInA = await env().team();
      await onlyInA.lead.addMember({ name: "zed" });
      const err = await b.lead
        .send({ to: "zed", message: text("x") })
        .catch((e) => ConnectError.from(e));
      expect((err as ConnectError).code).toBe(Code.NotFound);
      expect((await b.lead.listMembers({})).members.map((m) => m.name)).toEqual([
        "team-lead",
        "alice",
      ]);
    });

    it("lets only the lead add and remove members, and never remove itself", async () => {
      const t = await env().team("alice", "bob");
      const alice = t.member("alice").client;
      for (const call of [
        () => alice.addMember({ name: "eve" }),
        () => alice.removeMember({ name: "bob" }),
      ]) {
        const err = await call().catch((e) => ConnectError.from(e));
        expect((err as ConnectError).code).toBe(Code.PermissionDenied);
      }
      const self = await t.lead
        .removeMember({ name: "team-lead" })
        .catch((e) => ConnectError.from(e));
      expect((self as ConnectError).code).toBe(Code.FailedPrecondition);
      const missing = await t.lead
        .removeMember({ name: "ghost" })
        .catch((e) => ConnectError.from(e));
      expect((missing as ConnectError).code).toBe(Code.NotFound);
      expect((await t.lead.listMembers({})).members.map((m) => m.status)).toEqual([
        MemberStatus.ACTIVE,
        MemberStatus.ACTIVE,
        MemberStatus.ACTIVE,
      ]);
    });

    it("refuses a duplicate team name and a duplicate active member name with AlreadyExists", async () => {
      const t = await env().team("alice");
      const dupTeam = await env()
        .client()
        .createTeam({ team: t.name })
        .catch((e) => ConnectError.from(e));
      expect((dupTeam as ConnectError).code).toBe(Code.AlreadyExists);
      const dupMember = await t.lead
        .addMember({ name: "alice" })
        .catch((e) => ConnectError.from(e));
      expect((dupMember as ConnectError).code).toBe(Code.AlreadyExists);
    });

    it("re-adding a removed member gives a new token and keeps its inbox; the old token stays revoked", async () => {
      const t = await env().team("alice");
      await t.lead.send({ to: "alice", message: text("before") });
      await t.lead.removeMember({ name: "alice" });
      const again = await t.lead.addMember({ name: "alice" });
      expect(again.token).not.toBe(t.member("alice").token);
      const fresh = env().client(again.token);
      expect((await fresh.readInbox({})).envelopes.map((e) => e.message?.kind.value)).toEqual([
        "before",
      ]);
      const old = await t
        .member("alice")
        .client.listMembers({})
        .catch((e) => ConnectError.from(e));
      expect((old as ConnectError).code).toBe(Code.Unauthenticated);
    });

    it("ends a removed member's open subscription and refuses its next call", async () => {
      const t = await env().team("alice");
      const alice = t.member("alice").client;
      await alice.listMembers({}); // the token is in the caller cache now (for 10 minutes)
      const before = env().app.hub.waiting;
      const stream = alice.subscribe({});
      const ended = (async () => {
        try {
          for await (const _ of stream) {
            // heartbeats and messages until the server ends the stream
          }
          return undefined;
        } catch (err) {
          return ConnectError.from(err);
        }
      })();
      await subscribedBeyond(env().app, before);
      await t.lead.removeMember({ name: "alice" });
      const err = await ended;
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toMatch(/removed by the lead/);
      // Refused by the revocation emptying the cache, long before the entry would expire.
      const next = await alice.listMembers({}).catch((e) => ConnectError.from(e));
      expect((next as ConnectError).code).toBe(Code.Unauthenticated);
    });

    it("records when a member was last seen: at its call, by the database's clock", async () => {
      const t = await env().team("alice");
      const aliceSeen = async () =>
        (await t.lead.listMembers({})).members.find((m) => m.name === "alice")?.lastSeenAt;
      expect(await aliceSeen(), "before alice made a call").toBeUndefined();
      const dbNow = async () => {
        const [row] = await env().db.query<{ us: bigint | string }>(
          "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS us",
        );
        return BigInt(row?.us ?? 0);
      };
      const before = await dbNow();
      await t.member("alice").client.listMembers({});
      // The write is batched after the call: wait for it to show, not for a time.
      let seen = await aliceSeen();
      for (let i = 0; seen === undefined && i < 400; i++) {
        await new Promise((r) => setTimeout(r, 25));
        seen = await aliceSeen();
      }
      expect(seen, "alice's last_seen_at after her call").toBeDefined();
      const after = await dbNow();
      const seenUs =
        BigInt(seen?.seconds ?? 0n) * 1_000_000n + BigInt(Math.floor((seen?.nanos ?? 0) / 1000));
      // Stamped by the database between the call and now, not copied from another column.
      expect(seenUs >= before && seenUs <= after, `${before} <= ${seenUs} <= ${after}`).toBe(true);
    });
  },
  // A long caller-cache TTL: a revoked token refused here was forgotten, not expired.
  { heartbeatIntervalMs: 200, callerCacheTtlMs: 600_000 },
);

describe("admin token", () => {
  describeEachDatabase(
    "CreateTeam with TEAM_ADMIN_TOKEN set",
    (env: () => TestEnv) => {
      it("refuses CreateTeam without the admin token or with a wrong one", async () => {
        for (const token of [undefined, "wrong", `tp_${"B".repeat(43)}`]) {
          const err = await env()
            .client(token)
            .createTeam({ team: uniqueName("t") })
            .catch((e) => ConnectError.from(e));
          expect((err as ConnectError).code).toBe(Code.Unauthenticated);
        }
      });
      it("allows CreateTeam with the admin token", async () => {
        const created = await env()
          .client("the-admin-secret")
          .createTeam({ team: uniqueName("t") });
        expect(created.token).toMatch(/^tp_/);
      });
    },
    { adminToken: "the-admin-secret" },
  );
});
