import { ConnectError } from "@connectrpc/connect";
import { codeName, violationOf } from "@team-protocols/client/team-error.js";

/**
 * What the console shows when the server refuses a call: for a protocol rule, its id and the
 * sentence of its RuleViolation detail ("reason-on-reject: reason is required when
 * rejecting…"); otherwise the code and the message as the server wrote it.
 */
export function refusalText(err: unknown): string {
  const violation = violationOf(err);
  if (violation) return `${violation.rule}: ${violation.sentence}`;
  if (err instanceof ConnectError) return `${codeName(err.code)}: ${err.rawMessage}`;
  return err instanceof Error ? err.message : String(err);
}
