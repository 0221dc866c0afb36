import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { describeEachDatabase, uniqueName } from "../support/harness.js";
import { refused, text } from "../support/protocol-helpers.js";

describeEachDatabase("rules: size-shape and server-only", (env) => {
  it("refuses badly shaped team, lead and member names, naming the field", async () => {
    const anon = env().client();
    const cases: [() => Promise<unknown>, string][] = [
      [() => anon.createTeam({ team: "" }), "team"],
      [() => anon.createTeam({ team: "Upper" }), "team"],
      [() => anon.createTeam({ team: "-leading-dash" }), "team"],
      [() => anon.createTeam({ team: "a".repeat(65) }), "team"],
      [() => anon.createTeam({ team: uniqueName("t"), leadName: "has space" }), "lead_name"],
    ];
    const t = await env().team();
    cases.push([() => t.lead.addMember({ name: "Alice" }), "name"]);
    cases.push([() => t.lead.addMember({ name: "a/b" }), "name"]);
    cases.push([() => t.lead.removeMember({ name: "" }), "name"]);
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.message).toMatch(/^size-shape: /);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
  });

  it("accepts names at the limits of the shape", async () => {
    const name = `${"z".repeat(54)}.${"0".repeat(4)}_-x`.slice(0, 64);
    const created = await env().client().createTeam({ team: name, leadName: "l.e_a-d9" });
    expect(created.lead?.name).toBe("l.e_a-d9");
    const lead = env().client(created.token);
    expect((await lead.addMember({ name: "9" })).member?.name).toBe("9");
  });

  it("refuses a send without a message, with empty text, or with text over 64 KiB; accepts exactly 64 KiB", async () => {
    const t = await env().team("alice");
    const cases: [() => Promise<unknown>, string][] = [
      [() => t.lead.send({ to: "alice" }), "message"],
      [() => t.lead.send({ to: "alice", message: {} }), "message"],
      [() => t.lead.send({ to: "alice", message: text("   ") }), "message.text"],
      [
        () => t.lead.send({ to: "alice", message: text("é".repeat(32 * 1024 + 1)) }),
        "message.text",
      ],
      [() => t.lead.send({ to: "", message: text("hi") }), "to"],
      [
        () => t.lead.send({ to: "alice", message: text("hi"), messageId: "k".repeat(129) }),
        "message_id",
      ],
    ];
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
    const ok = await t.lead.send({
      to: "alice",
      message: text("é".repeat(32 * 1024)),
      messageId: "k".repeat(128),
    });
    expect(ok.seq).toBe(1n);
    // Nothing refused was stored.
    expect((await t.member("alice").client.readInbox({})).envelopes).toHaveLength(1);
  });

  it("refuses a request_update from a client (server-only)", async () => {
    const t = await env().team("alice");
    const r = await refused(() =>
      t.lead.send({
        to: "alice",
        message: { kind: { case: "requestUpdate", value: { requestId: "req_x" } } },
      }),
    );
    expect(r.code).toBe(Code.InvalidArgument);
    expect(r.detail?.rule).toBe("server-only");
  });

  it("refuses a body larger than the server's read limit without falling over", async () => {
    const t = await env().team("alice");
    const r = await refused(() =>
      t.lead.send({ to: "alice", message: text("x".repeat(2 * 1024 * 1024)) }),
    );
    expect([Code.ResourceExhausted, Code.InvalidArgument]).toContain(r.code);
    expect((await t.lead.send({ to: "alice", message: text("still up") })).seq).toBe(1n);
  });
});

describeEachDatabase("rules: values the database cannot hold", (env) => {
  it("refuses a message_id with control characters and seqs beyond bigint, without Internal", async () => {
    const t = await env().team("alice");
    const alice = t.member("alice").client;
    const huge = 2n ** 63n;
    const cases: [() => Promise<unknown>, string][] = [
      [() => t.lead.send({ to: "alice", message: text("x"), messageId: "a\u0000b" }), "message_id"],
      [
        () => t.lead.send({ to: "alice", message: text("x"), messageId: "tab\there" }),
        "message_id",
      ],
      [() => alice.ack({ seq: huge }), "seq"],
      [() => alice.readInbox({ afterSeq: huge }), "after_seq"],
      // Found by the fuzzer: a NUL in a filter reached the database as Internal.
      [() => t.lead.listAttempts({ member: "\u0000" }), "member"],
      [() => t.lead.listAttempts({ requestId: "req_\u0000" }), "request_id"],
      [() => t.lead.listRequests({ party: "a\u0000" }), "party"],
      [
        async () => {
          for await (const _ of alice.subscribe({ afterSeq: huge })) break;
        },
        "after_seq",
      ],
    ];
    for (const [call, field] of cases) {
      const r = await refused(call);
      expect(r.code).toBe(Code.InvalidArgument);
      expect(r.detail).toMatchObject({ rule: "size-shape", field });
    }
    expect((await alice.readInbox({})).envelopes).toHaveLength(0);
  });
});
