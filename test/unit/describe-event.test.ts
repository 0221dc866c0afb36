import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { describeEvent, describeTeamEvent } from "../../client/describe-event.js";
import {
  MemberChange,
  MemberRole,
  MemberStatus,
  PermissionMode,
  Presence,
  RequestKind,
  RequestStatus,
  SeenVia,
} from "../../gen/team/v1/enums_pb.js";
import { TeamEventSchema } from "../../gen/team/v1/feed_pb.js";

/** The team feed's one renderer: the console's columns and `team watch`'s line agree. */

const ID = "req_sCeliqsKR_Zi5279EPir5w";
const event = (change: NonNullable<MessageInitShape<typeof TeamEventSchema>["change"]>) =>
  create(TeamEventSchema, {
    position: 1n,
    at: timestampFromDate(new Date("2025-03-09T21:04:05.123Z")),
    change,
  });

describe("describeEvent / describeTeamEvent", () => {
  it("a message: subject and detail for the console, one line for team watch (a broadcast names its copy)", () => {
    const sent = event({
      case: "envelope",
      value: {
        recipient: "bob",
        envelope: {
          seq: 4n,
          from: "alice",
          to: "*",
          message: { kind: { case: "text", value: "done" } },
        },
      },
    });
    expect(describeEvent(sent)).toEqual({
      kind: "message",
      subject: "alice → bob (to *) #4",
      detail: "text: done",
    });
    expect(describeTeamEvent(sent).line).toBe("21:04:05.123Z  alice → bob (to *) #4  text: done");
  });

  it("a task request's change and a member's change, tagged by kind", () => {
    const claimed = event({
      case: "request",
      value: {
        request: {
          requestId: ID,
          kind: RequestKind.TASK_CLAIM,
          from: "bob",
          to: "team-lead",
          status: RequestStatus.REJECTED,
        },
      },
    });
    expect(describeEvent(claimed)).toEqual({
      kind: "request",
      subject: `task_claim ${ID} bob → team-lead`,
      detail: "rejected",
    });
    expect(describeTeamEvent(claimed)).toEqual({
      kind: "request",
      line: `21:04:05.123Z  request task_claim ${ID} bob → team-lead  rejected`,
    });
    const signoff = event({
      case: "request",
      value: { request: { requestId: ID, kind: RequestKind.RESULT_SIGNOFF, status: 1 } },
    });
    expect(describeEvent(signoff).subject).toMatch(/^result_signoff /);
    const added = event({
      case: "member",
      value: {
        change: MemberChange.PERMISSION_MODE,
        member: {
          name: "eye",
          role: MemberRole.OBSERVER,
          status: MemberStatus.ACTIVE,
          permissionMode: PermissionMode.DEFAULT,
        },
      },
    });
    expect(describeTeamEvent(added).line).toBe(
      "21:04:05.123Z  member eye (observer)  permission mode: active, mode default",
    );
    const idle = event({
      case: "member",
      value: {
        change: MemberChange.PRESENCE,
        member: {
          name: "bob",
          role: MemberRole.TEAMMATE,
          status: MemberStatus.ACTIVE,
          presence: Presence.IDLE,
          lastSeenVia: SeenVia.HOOK,
        },
      },
    });
    expect(describeTeamEvent(idle).line).toBe(
      "21:04:05.123Z  member bob (teammate)  presence: idle (last seen via hook)",
    );
    expect(describeTeamEvent(event({ case: undefined })).line).toBe(
      "21:04:05.123Z  unknown an event this client does not know",
    );
  });
});
