import { TaskProgress } from "@team-protocols/contract/team/v1/enums_pb.js";
import { type AnyRequest, M, type Rule } from "./rule.js";

// The task list's rules that a call shows by itself (the rest need the task's row:
// protocols/task-list.ts). Observers are refused every write before these (observer-read-only).

/** The dependency lists of an UpdateTask: only the lead changes what waits on what. */
const changesDependencies = (r: AnyRequest) =>
  r.addBlockedBy.length + r.removeBlockedBy.length + r.addBlocks.length + r.removeBlocks.length > 0;

/** signoff-completes: completed and in_review come from the sign-off protocol only. */
export const signoffCompletes: Rule = {
  id: "signoff-completes",
  refusal: "invalid-argument",
  check({ method, request }) {
    if (method !== M.updateTask) return undefined;
    if (request.status !== TaskProgress.COMPLETED && request.status !== TaskProgress.IN_REVIEW) {
      return undefined;
    }
    return {
      sentence:
        request.status === TaskProgress.COMPLETED
          ? "a task is completed only by the lead's approval of its owner's result: the owner sends result_signoff_request to the lead"
          : "a task is in_review while its owner's result_signoff_request waits for the lead: send one instead",
      field: "status",
    };
  },
};

/**
 * owner-or-lead-updates, as far as the call shows it: only the lead deletes a task or changes
 * dependencies; the lead holds no task, so it neither starts nor pauses one (its owner does).
 */
export const ownerOrLeadUpdates: Rule = {
  id: "owner-or-lead-updates",
  refusal: "permission-denied",
  check({ method, request, caller }) {
    const lead = caller?.role === "lead";
    if (method === M.deleteTask && !lead) {
      return { sentence: "only the lead deletes tasks" };
    }
    if (method !== M.updateTask) return undefined;
    if (!lead && request.status === TaskProgress.DELETED) {
      return { sentence: "only the lead deletes tasks", field: "status" };
    }
    if (!lead && changesDependencies(request)) {
      return {
        sentence:
          "only the lead changes what a task waits on (add_blocked_by, remove_blocked_by, add_blocks, remove_blocks)",
      };
    }
    if (
      lead &&
      (request.status === TaskProgress.PENDING || request.status === TaskProgress.IN_PROGRESS)
    ) {
      return {
        sentence:
          "only a task's owner sets it pending or in_progress; the lead gives a task with task_assign",
        field: "status",
      };
    }
    return undefined;
  },
};
