import { MemberRole } from "@team-protocols/contract/team/v1/enums_pb.js";
import {
  attemptOutcomeFromProto,
  permissionModeFromProto,
  requestKindFromProto,
  requestStatusFromProto,
  taskProgressFromProto,
  taskStateFromProto,
} from "../../domain/enums.js";
import { type AnyRequest, M, type RuleCall, type Violation } from "./rule.js";

// proto3 enums are open: a client may send any number in an enum field. A number outside the
// enum is a shape error, named by its field, before a handler converts it to the store's word.

const unknown = (field: string, value: number, what: string): Violation => ({
  sentence: `${field} ${value} is not a known ${what}`,
  field,
});

/** The enum fields of a call, each inside its enum; and AwaitRequest's timeout not negative. */
export function enumValueViolation({ method, request }: RuleCall): Violation | undefined {
  const r: AnyRequest = request;
  switch (method) {
    case M.createTeam:
      return permissionModeFromProto(r.leadPermissionMode) === undefined
        ? unknown("lead_permission_mode", r.leadPermissionMode, "permission mode")
        : undefined;
    case M.addMember:
      if (permissionModeFromProto(r.permissionMode) === undefined) {
        return unknown("permission_mode", r.permissionMode, "permission mode");
      }
      // A known role may still be refused: the handler adds no second lead.
      return MemberRole[r.role as MemberRole] === undefined
        ? unknown("role", r.role, "member role")
        : undefined;
    case M.listRequests:
      if (requestStatusFromProto(r.status) === undefined) {
        return unknown("status", r.status, "request status");
      }
      return requestKindFromProto(r.kind) === undefined
        ? unknown("kind", r.kind, "request kind")
        : undefined;
    case M.listAttempts:
      return attemptOutcomeFromProto(r.outcome) === undefined
        ? unknown("outcome", r.outcome, "attempt outcome")
        : undefined;
    case M.listTasks:
      if (taskProgressFromProto(r.status) === undefined) {
        return unknown("status", r.status, "task status");
      }
      return taskStateFromProto(r.state) === undefined
        ? unknown("state", r.state, "task state")
        : undefined;
    case M.updateTask:
      return taskProgressFromProto(r.status) === undefined
        ? unknown("status", r.status, "task status")
        : undefined;
    case M.awaitRequest:
      return r.timeout !== undefined && (r.timeout.seconds < 0n || r.timeout.nanos < 0)
        ? { sentence: "timeout is negative", field: "timeout" }
        : undefined;
  }
  return undefined;
}
