import { createContextKey } from "@connectrpc/connect";
import type { MemberWithLead } from "./store/members.js";

/**
 * The authenticated caller, put in the call's context values by the auth interceptor.
 * Handlers take identity from here only, never from the request.
 */
export type Caller = MemberWithLead;

export const callerKey = createContextKey<Caller | undefined>(undefined, {
  description: "the member the bearer token belongs to",
});

/** The caller of a TeamService call; the auth interceptor guarantees there is one. */
export function requireCaller(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): Caller {
  const caller = values.get(callerKey);
  if (!caller) throw new Error("no authenticated caller in context (auth interceptor missing?)");
  return caller;
}
