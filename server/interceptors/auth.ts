import type { Interceptor } from "@connectrpc/connect";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Caller, callerKey } from "../caller.js";
import { DomainError, LimitError } from "../errors.js";
import type { Database } from "../store/database.js";
import { findMemberByTokenHash, type SeenVia } from "../store/members.js";
import { markSeen } from "../store/presence.js";
import { isWellFormedToken, secretsEqual, tokenHashHex } from "../tokens.js";
import { type AuthThrottle, peerAddressKey } from "./auth-throttle.js";
import type { CallerCache } from "./caller-cache.js";
import { createSendRateLimiter } from "./send-rate.js";

/** The limit's name in refusals and metrics. */
export const CREATE_TEAM_RATE_LIMIT = "create-team-rate";

export interface AuthOptions {
  db: Database;
  /** When set, CreateTeam needs `Authorization: Bearer <adminToken>`. */
  adminToken?: string | undefined;
  /** last_seen_at is written at most this often per member. */
  touchIntervalMs?: number;
  /** Active callers by token; without it every call looks its token up. */
  cache?: CallerCache;
  /** Records activity (createTouchThrottle); one per process. */
  touch?: Touch;
  /** Failed look-ups per client address (auth-throttle.ts); one per process. */
  throttle?: AuthThrottle | undefined;
  /**
   * Without an admin token: CreateTeam calls one client address may make per minute, and at
   * once. Default 10 and 10; perMinute 0: no limit.
   */
  createTeamRate?: { perMinute: number; burst: number };
}

/**
 * Resolves `Authorization: Bearer <token>` to the calling member and puts it in the call's
 * context values (see caller.ts). Every TeamService call but CreateTeam and ImportTeam needs
 * an active member's token; those two (each makes a new team) are open unless an admin token
 * is configured, and held to the same rate per client address when open.
 */
export function authInterceptor(options: AuthOptions): Interceptor {
  const touch = options.touch ?? createTouchThrottle(options.db, options.touchIntervalMs ?? 10_000);
  const rate = options.createTeamRate ?? { perMinute: 10, burst: 10 };
  const creates = createSendRateLimiter<string>({
    perSecond: rate.perMinute / 60,
    burst: rate.burst,
  });
  return (next) => async (req) => {
    const token = bearerToken(req.header.get("authorization"));
    const method = req.method;
    if (method === TeamService.method.createTeam || method === TeamService.method.importTeam) {
      if (options.adminToken !== undefined) {
        if (token === undefined || !secretsEqual(token, options.adminToken)) {
          throw new DomainError(
            "unauthenticated",
            `${method.name} needs the admin token: this server has TEAM_ADMIN_TOKEN set`,
          );
        }
      } else if (rate.perMinute > 0) {
        // Open CreateTeam hands anyone a lead token: held to a rate per client address.
        const waitMs = creates.take(req.contextValues.get(peerAddressKey) ?? "");
        if (waitMs !== undefined) {
          throw new LimitError(
            CREATE_TEAM_RATE_LIMIT,
            `this address may create ${rate.perMinute} teams a minute (bursts of ${rate.burst}; ` +
              `CREATE_TEAM_RATE_PER_MIN, or set TEAM_ADMIN_TOKEN); retry in ${Math.ceil(waitMs)} ms`,
            waitMs,
          );
        }
      }
      return next(req);
    }
    const caller = await authenticate(options, token, req.contextValues.get(peerAddressKey));
    req.contextValues.set(callerKey, caller);
    touch(
      caller.id,
      req.method === TeamService.method.subscribe
        ? "stream"
        : seenViaHeader(req.header.get(TEAM_CLIENT_HEADER)),
    );
    return next(req);
  };
}

async function resolveCaller(
  options: Pick<AuthOptions, "db" | "cache" | "throttle">,
  key: string,
  address: string | undefined,
): Promise<Caller> {
  const cached = options.cache?.get(key);
  if (cached) return cached;
  // Before the look-up: a flood of bad tokens must not cost a transaction each.
  options.throttle?.beforeLookUp(address, key);
  const epoch = options.cache?.epoch() ?? 0;
  const lookUp = () => findMemberByTokenHash(options.db, Buffer.from(key, "hex"));
  const member = await (options.cache ? options.cache.shared(key, epoch, lookUp) : lookUp());
  if (!member) {
    options.throttle?.unknown(address, key);
    throw new DomainError("unauthenticated", "unknown token");
  }
  if (member.status !== "active") {
    throw new DomainError(
      "unauthenticated",
      `token revoked: member "${member.name}" of team "${member.teamName}" is stopped`,
    );
  }
  const caller: Caller = {
    id: member.id,
    teamId: member.teamId,
    teamName: member.teamName,
    name: member.name,
    role: member.role,
    lead: member.lead,
  };
  options.cache?.set(key, caller, epoch);
  return caller;
}

/**
 * The caller a bearer token belongs to, or an Unauthenticated DomainError that says what is
 * wrong. `token` is what bearerToken() found in the Authorization header.
 */
export async function authenticate(
  options: Pick<AuthOptions, "db" | "cache" | "throttle">,
  token: string | undefined,
  /** The client's address, for the throttle of failed look-ups. */
  address?: string | undefined,
): Promise<Caller> {
  if (token === undefined) {
    throw new DomainError(
      "unauthenticated",
      "missing credentials: send the header `Authorization: Bearer <token>` with the token " +
        "CreateTeam or AddMember returned",
    );
  }
  if (!isWellFormedToken(token)) {
    throw new DomainError("unauthenticated", "malformed token: expected tp_ and 43 characters");
  }
  return resolveCaller(options, tokenHashHex(token), address);
}

export function bearerToken(header: string | null | undefined): string | undefined {
  if (header === null || header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  // A header that is there but not a bearer token is malformed, not missing.
  return match ? match[1] : header.trim() === "" ? undefined : "";
}

/**
 * The header a client names itself by (`team-client: mcp` from the MCP bridge, `hook` from
 * `team hook` and the git hook): what presence says the member was seen through. Anything
 * else, or none, is a plain call ("rpc"). Not a credential: it only labels the caller's own
 * last_seen_via.
 */
export const TEAM_CLIENT_HEADER = "team-client";

export function seenViaHeader(value: string | null | undefined): SeenVia {
  const v = value?.trim().toLowerCase();
  return v === "mcp" || v === "hook" ? v : "rpc";
}

/** Records that a member was seen, and how (throttled: see createTouchThrottle). */
export type Touch = (memberId: number, via: SeenVia) => void;

// last_seen_at is a write; doing it on every call would double the write load of reads.
// Batched: seen members collected, written together, at most once per interval per member
// and way (so a stream's member also seen through MCP records both, in turn).
export function createTouchThrottle(db: Database, intervalMs: number): Touch {
  const lastWritten = new Map<string, number>();
  let pending = new Map<number, SeenVia>();
  let scheduled = false;
  return (memberId, via) => {
    const now = Date.now();
    const key = `${memberId}:${via}`;
    if (now - (lastWritten.get(key) ?? 0) < intervalMs) return;
    lastWritten.set(key, now);
    pending.set(memberId, via);
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      const seen = pending;
      pending = new Map();
      scheduled = false;
      markSeen(db, seen).catch(() => {
        // Best effort: a lost last-seen update is not worth failing or logging a call for.
      });
    });
  };
}
