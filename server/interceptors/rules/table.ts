import type { Interceptor } from "@connectrpc/connect";
import { callerKey } from "../../caller.js";
import { RuleViolationError } from "../../errors.js";
import { noBroadcast, serverOnly } from "./addressing.js";
import { approverActsForLead } from "./approver.js";
import { exportLeadOrObserver, observerReadOnly, watchLeadOrObserver } from "./observers.js";
import { permissionToLead } from "./permission.js";
import { leadOnlyApproval, planToLead } from "./plan-approval.js";
import { reasonOnReject } from "./reason-on-reject.js";
import { feedbackOnReject, leadOnlySignoff, signoffToLead } from "./result-signoff.js";
import type { Rule, RuleCall } from "./rule.js";
import { leadOnlyShutdown, responseToLead, shutdownToTeammate } from "./shutdown.js";
import { sizeShape } from "./size-shape.js";
import { assignToTeammate, claimToLead, leadOnlyAssign } from "./task-claim.js";
import { handoffToOther } from "./task-handoff.js";
import { ownerOrLeadUpdates, signoffCompletes } from "./task-list.js";
import { taskToLead } from "./task-notification.js";

export type { Rule, RuleCall, Violation } from "./rule.js";

/**
 * The stateless rules table, in the order the rules are checked: shape first (so later rules
 * can trust it), then what may be sent to whom, then each protocol's who-may-send-what.
 * Each concern lives in its own file; a new protocol adds its file and its rows here.
 */
export const rules: readonly Rule[] = [
  sizeShape,
  observerReadOnly,
  approverActsForLead,
  watchLeadOrObserver,
  exportLeadOrObserver,
  serverOnly,
  noBroadcast,
  leadOnlyShutdown,
  shutdownToTeammate,
  responseToLead,
  leadOnlyApproval,
  planToLead,
  permissionToLead,
  taskToLead,
  claimToLead,
  leadOnlyAssign,
  assignToTeammate,
  handoffToOther,
  signoffToLead,
  leadOnlySignoff,
  signoffCompletes,
  ownerOrLeadUpdates,
  // After every who-may-answer rule: a wrong answerer hears that first.
  reasonOnReject,
  feedbackOnReject,
];

/**
 * Checks a call against the table; throws the first violation. The interceptor calls it for
 * unary calls; Subscribe (a stream, whose request the interceptor cannot read) calls it itself.
 */
export function checkRules(call: RuleCall, table: readonly Rule[] = rules): void {
  for (const rule of table) {
    const violation = rule.check(call);
    if (violation) {
      throw new RuleViolationError(rule.id, rule.refusal, violation.sentence, violation.field);
    }
  }
}

/** Applies the rules table to every unary TeamService call, after authentication. */
export function rulesInterceptor(table: readonly Rule[] = rules): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      checkRules(
        {
          method: req.method,
          request: req.message as RuleCall["request"],
          caller: req.contextValues.get(callerKey),
        },
        table,
      );
    }
    return next(req);
  };
}
