import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { MemberChange, MemberRole, MemberStatus } from "../../gen/team/v1/enums_pb.js";

// Enum words the console shows that client/names.ts does not have (yet): the observer role
// and member changes.

export const roleName = (r: MemberRole) =>
  ({
    [MemberRole.LEAD]: "lead",
    [MemberRole.TEAMMATE]: "teammate",
    [MemberRole.OBSERVER]: "observer",
    [MemberRole.UNSPECIFIED]: "unspecified",
  })[r] ?? "unspecified";

export const statusName = (s: MemberStatus) =>
  s === MemberStatus.ACTIVE ? "active" : s === MemberStatus.STOPPED ? "stopped" : "unspecified";

export const changeName = (c: MemberChange) =>
  ({
    [MemberChange.ADDED]: "added",
    [MemberChange.STOPPED]: "stopped",
    [MemberChange.REMOVED]: "removed",
    [MemberChange.PERMISSION_MODE]: "mode changed",
    [MemberChange.UNSPECIFIED]: "changed",
  })[c] ?? "changed";

/** "14:03:07" in the browser's time zone; "never" when unset. */
export const clockTime = (t: Timestamp | undefined) =>
  t ? timestampDate(t).toLocaleTimeString([], { hour12: false }) : "never";

/** The full ISO instant, for a title attribute. */
export const isoTime = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "");
