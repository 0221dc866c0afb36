import { createContextKey } from "@connectrpc/connect";
import type { MemberWithLead } from "./store/members.js";

/**
 * The authenticated caller, put in the call's context values by the auth interceptor.
 * Handlers take identity from here only, never from the request. Only what cannot change
 * while a member is active: the auth interceptor may take it from its cache
 * (interceptors/caller-cache.ts), so mutable columns (status, permission mode, last seen)
 * are left out, and whatever must be current is read in the call's own transaction.
 */
export type Caller = Pick<MemberWithLead, "id" | "teamId" | "teamName" | "name" | "role" | "lead">;

export const callerKey = createContextKey<Caller | undefined>(undefined, {
  description: "the member the bearer token belongs to",
});

/** The caller of a TeamService call; the auth interceptor guarantees there is one. */
export function requireCaller(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): Caller {
  const caller = values.get(callerKey);
  if (!caller) throw new Error("no authenticated caller in context (auth interceptor missing?)");
  return caller;
}
