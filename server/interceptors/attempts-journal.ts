import { Code, type Interceptor } from "@connectrpc/connect";
import type { Message } from "@team-protocols/contract/team/v1/message_pb.js";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { callerKey } from "../caller.js";
import { isProtocolMessage, messageAction } from "../domain/message-kinds.js";
import { DomainError, RuleViolationError } from "../errors.js";
import type { Logger } from "../logger.js";
import { recordAttempt } from "../store/attempts.js";
import type { Queryable } from "../store/database.js";
import { toConnectError } from "./error-mapping.js";

/**
 * The protocol journal's refusals. Every protocol step a member attempts is journaled:
 * - accepted ones by the code that carries them out, in the same transaction as their
 *   effect (handlers/messaging.ts, protocols/cancel.ts), so a step is in the journal
 *   exactly when it happened;
 * - refused ones here, right after the refusal: whichever layer refused (the rules table
 *   in the next interceptor, or a stateful rule inside the store's rolled-back
 *   transaction), the refusal passes through this interceptor on its way out.
 * It sits after authentication (an attempt belongs to a member; calls without a valid
 * token are nobody's) and before the rules interceptor.
 */

/** What a call attempts, as the journal names it; undefined for calls that are no step. */
export interface AttemptedStep {
  action: string;
  to: string;
  requestId: string;
  /** Only refusals by these rules are journaled (a call that is a step only when refused so). */
  onlyRules?: readonly string[];
}

const M = TeamService.method;

export function attemptedStep(
  method: { name: string },
  request: Record<string, unknown>,
): AttemptedStep | undefined {
  if (method.name === M.send.name) {
    const message = request.message as Message | undefined;
    if (!isProtocolMessage(message)) return undefined;
    const value = message?.kind.value as { requestId?: unknown } | undefined;
    return {
      action: messageAction(message),
      to: String(request.to ?? ""),
      requestId: typeof value?.requestId === "string" ? value.requestId : "",
    };
  }
  if (method.name === M.cancelRequest.name) {
    return { action: "cancel_request", to: "", requestId: String(request.requestId ?? "") };
  }
  if (method.name === M.releaseLease.name) {
    // A release is a step only as a break of another member's lease: refused because the
    // caller is not the holder (and not the lead) or gave no reason. Its holder is unknown
    // here; an accepted break is journaled by protocols/leases.ts with the holder's name.
    return {
      action: "break_lease",
      to: "",
      requestId: String(request.leaseId ?? ""),
      onlyRules: ["lease-holder-only", "reason-on-reject"],
    };
  }
  return undefined;
}

const snake = (code: Code) =>
  Code[code].replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c).toLowerCase();

/** Journals each refused protocol step of a TeamService unary call, then lets the refusal go on. */
export function attemptsJournalInterceptor(db: Queryable, logger: Logger): Interceptor {
  return (next) => async (req) => {
    const caller = req.contextValues.get(callerKey);
    const step =
      !req.stream && caller
        ? attemptedStep(req.method, req.message as unknown as Record<string, unknown>)
        : undefined;
    if (!step || !caller) return next(req);
    try {
      return await next(req);
    } catch (err) {
      // A refusal is the server saying no. Anything else (the database gone, a bug)
      // changed nothing and refused nothing: there is no outcome to journal.
      const { onlyRules, ...named } = step;
      const journaled =
        !onlyRules || (err instanceof RuleViolationError && onlyRules.includes(err.rule));
      if (err instanceof DomainError && err.refusal !== "unavailable" && journaled) {
        const refusal = toConnectError(err);
        await recordAttempt(db, {
          teamId: caller.teamId,
          memberId: caller.id,
          ...named,
          outcome: "refused",
          rule: err instanceof RuleViolationError ? err.rule : "",
          code: snake(refusal.code),
          message: refusal.rawMessage,
        }).catch((journalErr: unknown) => {
          // The caller still gets its refusal; the lost journal line is ours to report.
          logger.error(
            { event: "journal_failed", method: req.method.name, err: journalErr },
            "could not journal a refused protocol attempt",
          );
        });
      }
      throw err;
    }
  };
}
