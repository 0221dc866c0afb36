import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { MessageSchema } from "../../gen/team/v1/message_pb.js";
import {
  AckRequestSchema,
  AddMemberRequestSchema,
  CreateTeamRequestSchema,
  ReadInboxRequestSchema,
  SendRequestSchema,
  SubscribeRequestSchema,
  TeamService,
} from "../../gen/team/v1/team_service_pb.js";
import type { Caller } from "../../server/caller.js";
import { MAX_SEQ, MAX_TEXT_BYTES } from "../../server/domain/limits.js";
import { RuleViolationError } from "../../server/errors.js";
import { checkRules, type RuleCall } from "../../server/interceptors/rules.js";

// The stateless rules table called directly: no server, no database. The end-to-end rule
// suites (rules.test.ts, protocol-rules.test.ts) show the same refusals on the wire.

const M = TeamService.method;
const lead: Caller = {
  id: 1,
  teamId: 1,
  teamName: "t",
  name: "lead",
  role: "lead",
  lead: { id: 1, name: "lead", permissionMode: "default" },
};
const mate: Caller = { ...lead, id: 2, name: "ann", role: "teammate" };

function call<S extends DescMessage>(
  method: RuleCall["method"],
  schema: S,
  init: MessageInitShape<S>,
  caller: Caller | undefined = mate,
): RuleCall {
  return { method, request: create(schema, init) as RuleCall["request"], caller };
}

const send = (to: string, message: MessageInitShape<typeof MessageSchema>, caller = mate) =>
  call(M.send, SendRequestSchema, { to, message: create(MessageSchema, message) }, caller);

/** The rule and field a call is refused under; undefined when it passes. */
function refusal(c: RuleCall): { rule: string; field: string } | undefined {
  try {
    checkRules(c);
    return undefined;
  } catch (e) {
    if (!(e instanceof RuleViolationError)) throw e;
    return { rule: e.rule, field: e.field };
  }
}

const rows: [string, RuleCall, { rule: string; field: string } | undefined][] = [
  ["a valid team name", call(M.createTeam, CreateTeamRequestSchema, { team: "demo" }), undefined],
  [
    "an upper-case team name",
    call(M.createTeam, CreateTeamRequestSchema, { team: "Demo" }),
    { rule: "size-shape", field: "team" },
  ],
  [
    "an empty member name",
    call(M.addMember, AddMemberRequestSchema, { name: "" }, lead),
    { rule: "size-shape", field: "name" },
  ],
  ["text to one member", send("bob", { kind: { case: "text", value: "hi" } }), undefined],
  ["text to everyone", send("*", { kind: { case: "text", value: "hi" } }), undefined],
  [
    "text over the limit",
    send("bob", { kind: { case: "text", value: "x".repeat(MAX_TEXT_BYTES + 1) } }),
    { rule: "size-shape", field: "message.text" },
  ],
  [
    "a shutdown request broadcast",
    send("*", { kind: { case: "shutdownRequest", value: {} } }, lead),
    { rule: "no-broadcast", field: "to" },
  ],
  ["ack at the largest seq", call(M.ack, AckRequestSchema, { seq: MAX_SEQ }), undefined],
  [
    "ack past the largest seq",
    call(M.ack, AckRequestSchema, { seq: MAX_SEQ + 1n }),
    { rule: "size-shape", field: "seq" },
  ],
  [
    "read after a seq past the largest",
    call(M.readInbox, ReadInboxRequestSchema, { afterSeq: MAX_SEQ + 1n }),
    { rule: "size-shape", field: "after_seq" },
  ],
  [
    "subscribe after a seq past the largest",
    call(M.subscribe, SubscribeRequestSchema, { afterSeq: MAX_SEQ + 1n }),
    { rule: "size-shape", field: "after_seq" },
  ],
  ["subscribe without after_seq", call(M.subscribe, SubscribeRequestSchema, {}), undefined],
];

describe("the rules table, called directly", () => {
  it.each(rows)("%s", (_, c, expected) => {
    expect(refusal(c)).toEqual(expected);
  });
});
