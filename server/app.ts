import type { ConnectRouter } from "@connectrpc/connect";
import { TeamService } from "../gen/team/v1/team_service_pb.js";
import { membershipHandlers } from "./handlers/membership.js";
import { messagingHandlers } from "./handlers/messaging.js";
import { requestHandlers } from "./handlers/requests.js";
import { subscribeHandler } from "./handlers/subscribe.js";
import { createInboxHub, type InboxHub } from "./inbox/hub.js";
import { authInterceptor } from "./interceptors/auth.js";
import { errorMappingInterceptor } from "./interceptors/error-mapping.js";
import { rulesInterceptor } from "./interceptors/rules.js";
import type { Logger } from "./logger.js";
import { type ExpirySweeper, startExpirySweeper } from "./protocols/expiry-sweeper.js";
import { defaultProtocolConfig, type ProtocolConfig } from "./protocols/protocol.js";
import { createRequestWaiters } from "./protocols/request-waiters.js";
import type { Database } from "./store/database.js";

export interface AppOptions {
  db: Database;
  logger: Logger;
  /** Deadlines of protocol requests (defaults: shutdown 5 min, plan approval 30 min). */
  protocols?: ProtocolConfig;
  /** How often overdue requests are expired. Default 250 ms. */
  sweepIntervalMs?: number;
  /** When set, CreateTeam needs it as a bearer token. */
  adminToken?: string | undefined;
  /** Idle subscriptions get a heartbeat this often. Default 15 s. */
  heartbeatIntervalMs?: number;
}

export interface App {
  /** Registers every service on a Connect router (connectNodeAdapter, createRouterTransport). */
  routes(router: ConnectRouter): void;
  /** Live subscriptions of this process. */
  readonly hub: InboxHub;
  /** Expires overdue requests (runs on a timer until close()). */
  readonly sweeper: ExpirySweeper;
  /** Stops background work (the sweeper). Call after the server stops taking calls. */
  close(): Promise<void>;
}

/**
 * The service, independent of any transport: tests mount it on an in-memory transport or
 * on a real server, main.ts on the one-port HTTP server.
 */
export function createApp(options: AppOptions): App {
  const { db, logger } = options;
  const hub = createInboxHub();
  const waiters = createRequestWaiters();
  const deps = { db, hub, waiters };
  const impl = {
    ...membershipHandlers(deps),
    ...messagingHandlers({ ...deps, protocols: options.protocols ?? defaultProtocolConfig }),
    ...subscribeHandler({ ...deps, heartbeatIntervalMs: options.heartbeatIntervalMs ?? 15_000 }),
    ...requestHandlers(deps),
  };
  const sweeper = startExpirySweeper({
    ...deps,
    logger,
    intervalMs: options.sweepIntervalMs ?? 250,
  });
  return {
    hub,
    sweeper,
    close: () => sweeper.stop(),
    routes(router) {
      router.service(TeamService, impl, {
        // Outermost first: errors of every later step are mapped; rules see the caller.
        interceptors: [
          errorMappingInterceptor(logger),
          authInterceptor({ db, adminToken: options.adminToken }),
          rulesInterceptor(),
        ],
      });
    },
  };
}
