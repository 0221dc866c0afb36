import { describe, expect, it } from "vitest";
import {
  answerMessage,
  createPromptReader,
  describeMessage,
  toPromptText,
} from "../../client/index.js";
import { toMessageInit } from "../../client/mcp/message-input.js";
import { roleDuties } from "../../client/role-duties.js";
import { RequestKind, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { envelopeOf, SENT_AT } from "../support/envelopes.js";

const ID = "req_sCeliqsKR_Zi5279EPir5w";
const AT = SENT_AT;

const asked = envelopeOf(
  {
    kind: {
      case: "permissionRequest",
      value: {
        toolName: "Bash",
        description: "Remove the <build> folder",
        inputPreview: '{"command":"rm -rf build"}',
        runtimeRequestId: "abcde",
      },
    },
  },
  { from: "alice", to: "team-lead", requestId: ID },
);

/** What a permission prompt and its answer look like to an agent, a person and the CLI. */
describe("permission_request / permission_response as text", () => {
  it("asks the lead for the exact answer, as send_message takes it or as the CLI command", () => {
    expect(toPromptText(asked)).toBe(
      [
        `<permission-request from="alice" to="team-lead" request_id="${ID}" seq="7" sent_at="${AT}">`,
        'alice asks for permission to use the tool "Bash": Remove the &lt;build&gt; folder',
        '<input>\n{"command":"rm -rf build"}\n</input>',
        "Answer it (exactly once) to allow this one use, or to deny it with a reason (alice's runtime is told either way):",
        `  permission_response to "alice": { request_id: "${ID}", allow: true }\n` +
          `  permission_response to "alice": { request_id: "${ID}", allow: false, reason: "<why not>" }`,
        "</permission-request>",
      ].join("\n"),
    );
    expect(toPromptText(asked, { answers: "cli" })).toContain(
      `  team allow ${ID}\n  team deny ${ID} --reason "<why not>"`,
    );
    // Settled: no answer is asked for.
    const settled = toPromptText(asked, { status: RequestStatus.APPROVED });
    expect(settled).toContain("no longer pending: it is approved");
    expect(settled).not.toContain("permission_response to");
  });

  it("tells the teammate the verdict; a prompt reader learns the request is settled", () => {
    const allowed = envelopeOf(
      { kind: { case: "permissionResponse", value: { requestId: ID, allow: true, reason: "" } } },
      { requestId: ID },
    );
    const denied = envelopeOf(
      {
        kind: {
          case: "permissionResponse",
          value: { requestId: ID, allow: false, reason: "not on main" },
        },
      },
      { requestId: ID },
    );
    expect(toPromptText(allowed)).toContain(
      `team-lead allowed your permission request ${ID}: the tool may be used this once.`,
    );
    expect(toPromptText(denied)).toContain(
      `team-lead denied your permission request ${ID}. Reason: not on main`,
    );
    const reader = createPromptReader();
    reader.observe(asked);
    reader.observe(denied);
    expect(reader.render(asked)).toContain("no longer pending: it is rejected");
  });

  it("an approver's answer: the teammate is answered; the lead's copy says it was on its behalf, for each kind an approver answers", () => {
    const answers = [
      [
        {
          case: "permissionResponse",
          value: { requestId: ID, allow: false, reason: "not on main" },
        },
        `judge denied alice's permission request ${ID} on your behalf. Reason: not on main`,
        `judge denied your permission request ${ID}. Reason: not on main`,
      ],
      [
        {
          case: "planApprovalResponse",
          value: { requestId: ID, approve: false, feedback: "tests first" },
        },
        `judge rejected alice's plan (request ${ID}) on your behalf. Feedback: tests first`,
        `judge rejected your plan (request ${ID}). Feedback: tests first`,
      ],
      [
        { case: "taskClaimResponse", value: { requestId: ID, approve: true, reason: "" } },
        `judge approved alice's claim of task "t1" (request ${ID}) on your behalf: the task is alice's now.`,
        `judge approved your claim of task "t1" (request ${ID}): the task is yours now.`,
      ],
      [
        { case: "resultSignoffResponse", value: { requestId: ID, approve: true, feedback: "" } },
        `judge signed off alice's result of task "t1" (request ${ID}) on your behalf: the task is done.`,
        `judge signed off your result of task "t1" (request ${ID}): the task is done.`,
      ],
    ] as const;
    for (const [kind, leadReads, aliceReads] of answers) {
      const e = envelopeOf({ kind }, { from: "judge", to: "alice", requestId: ID });
      const lead = toPromptText(e, { reader: "team-lead", taskId: "t1" });
      expect(lead).toContain(leadReads);
      expect(lead).toContain("alice has been told; nothing is asked of you.");
      expect(toPromptText(e, { reader: "alice", taskId: "t1" })).toContain(aliceReads);
      // A reader not named: worded for the addressee, as before.
      expect(toPromptText(e, { taskId: "t1" })).toContain(aliceReads);
    }
  });

  it("describes both for people; answerMessage and send_message build the answer", () => {
    expect(describeMessage(asked.message)).toBe(
      'permission_request Bash: Remove the <build> folder\n    {"command":"rm -rf build"}',
    );
    expect(answerMessage(RequestKind.PERMISSION, ID, false, "why")?.kind).toEqual({
      case: "permissionResponse",
      value: { requestId: ID, allow: false, reason: "why" },
    });
    expect(
      toMessageInit({ type: "permission_response", request_id: ID, allow: true }).kind,
    ).toEqual({ case: "permissionResponse", value: { requestId: ID, allow: true, reason: "" } });
    expect(
      describeMessage(
        envelopeOf({
          kind: {
            case: "permissionResponse",
            value: { requestId: ID, allow: false, reason: "no" },
          },
        }).message,
      ),
    ).toContain("denied");
  });

  it("gives the approver its duties, and the lead the permission answer", () => {
    expect(roleDuties("approver").join("\n")).toContain("permission_response");
    expect(roleDuties("lead").join("\n")).toContain("permission_request");
  });
});
