import type { KeyObject } from "node:crypto";
import { type ConnectRouter, createRouterTransport } from "@connectrpc/connect";
import { teamErrorInterceptor } from "@team-protocols/client/team-error.js";
import { file_team_v1_rule_violation } from "@team-protocols/contract/team/v1/rule_violation_pb.js";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import {
  type BacklogLimits,
  DEFAULT_BACKLOG_LIMITS,
  IMPORT_MAX_BYTES_DEFAULT,
} from "./domain/limits.js";
import { CallValues } from "./grpc/call-values.js";
import { createGrpcCalls } from "./grpc/grpc-calls.js";
import { attemptHandlers } from "./handlers/attempts.js";
import { historyHandlers } from "./handlers/history.js";
import { historyExportHandlers } from "./handlers/history-export.js";
import { leaseHandlers } from "./handlers/leases.js";
import { membershipHandlers } from "./handlers/membership.js";
import { messagingHandlers } from "./handlers/messaging.js";
import { requestHandlers } from "./handlers/requests.js";
import { createSlowConsumerBackoff } from "./handlers/slow-consumer-backoff.js";
import { createDeliveries, subscribeHandler } from "./handlers/subscribe.js";
import { taskHandlers } from "./handlers/tasks.js";
import { watchHandler } from "./handlers/watch.js";
import { createHealthMonitor, type HealthMonitor } from "./health/health-monitor.js";
import { serveHealth } from "./health/health-service.js";
import {
  ACCEPT_COMPRESSION,
  createConnectAdapter,
  type NodeHandler,
} from "./http/connect-adapter.js";
import { loadConsoleAssets } from "./http/console-assets.js";
import type { WholeBodies } from "./http/held-bodies.js";
import { createHostGuard } from "./http/host-guard.js";
import type { RawStreams } from "./http/http-server.js";
import { createOriginGuard } from "./http/origin-guard.js";
import { contextValuesFor, responseCutKey } from "./http/slow-consumer-guard.js";
import { wholeBodyRoutes } from "./http/whole-body-routes.js";
import { writePressureKey } from "./http/write-pressure.js";
import { createClusterBus } from "./inbox/cluster-bus.js";
import { createInboxHub, type InboxHub } from "./inbox/hub.js";
import { createRequestWaiters, type RequestWaiters } from "./inbox/request-waiters.js";
import { createTeamHub, type TeamHub } from "./inbox/team-hub.js";
import { attemptsJournalInterceptor } from "./interceptors/attempts-journal.js";
import { authenticate, authInterceptor, createTouchThrottle } from "./interceptors/auth.js";
import {
  type AuthThrottleOptions,
  createAuthThrottle,
  peerAddressKey,
} from "./interceptors/auth-throttle.js";
import { createCallerCache } from "./interceptors/caller-cache.js";
import { errorMappingInterceptor } from "./interceptors/error-mapping.js";
import { metricsInterceptor } from "./interceptors/metrics-interceptor.js";
import { rulesInterceptor } from "./interceptors/rules/table.js";
import { type SendRateOptions, sendRateInterceptor } from "./interceptors/send-rate.js";
import {
  DEFAULT_PRESENCE,
  type PresenceJob,
  type PresenceOptions,
  startPresenceJob,
} from "./jobs/presence.js";
import { type RetentionJob, startRetentionJob } from "./jobs/retention.js";
import { type SearchIndexer, startSearchIndexer, withWakeHook } from "./jobs/search-indexer.js";
import type { Logger } from "./logger.js";
import { inProcessRpcTransport } from "./mcp/in-process-rpc.js";
import { createMcpEndpoint, MCP_PATH } from "./mcp/mcp-endpoint.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import { createMetricsEndpoint, METRICS_PATH } from "./metrics/metrics-endpoint.js";
import { type ExpirySweeper, startExpirySweeper } from "./protocols/expiry-sweeper.js";
import {
  DEFAULT_LEASE_TTLS,
  DEFAULT_MAX_LEASES_PER_MEMBER,
  type LeaseTtls,
} from "./protocols/leases.js";
import { defaultProtocolConfig, type ProtocolConfig } from "./protocols/protocol.js";
import { serveReflection } from "./reflection/server-reflection.js";
import type { Database } from "./store/database.js";
import { inboxBacklog, requestsByStatus } from "./store/metrics-queries.js";

/** Largest request body accepted (a 256 KiB plan plus protobuf framing, with room). */
export const READ_MAX_BYTES = 1024 * 1024;

/** How often overdue requests are expired when AppOptions.sweepIntervalMs is unset. */
export const DEFAULT_SWEEP_INTERVAL_MS = 250;

export interface AppOptions {
  db: Database;
  logger: Logger;
  /** Deadlines of protocol requests (defaults: shutdown 5 min, plan approval 30 min). */
  protocols?: ProtocolConfig;
  /** How often overdue requests are expired. Default DEFAULT_SWEEP_INTERVAL_MS (250 ms). */
  sweepIntervalMs?: number;
  /** When set, CreateTeam and ImportTeam need it as a bearer token. */
  adminToken?: string | undefined;
  /**
   * The Ed25519 private key ExportTeam signs bundles with (export/signing-key.ts loads it);
   * unset: ExportTeam is refused, and ImportTeam trusts only keys given in the request.
   */
  exportSigningKey?: KeyObject | undefined;
  /** The largest bundle ImportTeam loads (IMPORT_MAX_BYTES). Default 4 GiB. */
  importMaxBytes?: number;
  /** Idle subscriptions get a heartbeat this often. Default 15 s. */
  heartbeatIntervalMs?: number;
  /**
   * How long an active member's token is trusted without a database look-up (revocations
   * reach the cache at once; this bounds changes made by hand in SQL). 0 turns the cache
   * off. Default 10 s.
   */
  callerCacheTtlMs?: number;
  /** A lease's ttl when AcquireLease or RenewLease gives none, and the longest allowed. */
  leaseTtls?: LeaseTtls;
  /** Live leases one member may hold at once. Default 64; 0: no limit. */
  maxLeasesPerMember?: number;
  /**
   * Deletes acked messages, finished requests, idempotency keys and member events after
   * `days`, journal lines after `journalDays` (0: keep), checking every `intervalMs`.
   * Default 30, 30, 1 h.
   */
  retention?: { days: number; journalDays: number; intervalMs: number };
  /**
   * Presence windows (online within onlineS, idle within offlineS), the task-owner timeout
   * (0: off) and how often the presence job runs. Default DEFAULT_PRESENCE (60 s, 900 s, off).
   */
  presence?: PresenceOptions;
  /** Sends per member per second and the burst allowed (perSecond 0: no limit). Default 100, 200. */
  sendRate?: Pick<SendRateOptions, "perSecond" | "burst">;
  /**
   * What a recipient's inbox may hold unacked (messages, bytes of bodies) before sends to it
   * are refused with ResourceExhausted, limit "inbox-backlog"; 0: no limit. Default 10,000
   * messages and 64 MiB.
   */
  inboxBacklog?: BacklogLimits;
  /** Subscriptions one member may hold open at once, per process. Default 16. */
  maxSubscriptionsPerMember?: number;
  /** wait_for_messages calls over /mcp one member may have pending, per process. Default 4. */
  maxMcpWaitsPerMember?: number;
  /**
   * Failed token look-ups per client address (per second, burst) and how long an unknown
   * token is refused without a look-up. Default 10/s, bursts of 20, 60 s; perSecond 0: off.
   */
  authFailures?: Omit<AuthThrottleOptions, "now">;
  /**
   * Without `adminToken`: CreateTeam calls per client address per minute (and at once), and
   * the teams the database may hold. Default 10, 10 and 1,000; 0: no limit. With an admin
   * token neither applies.
   */
  openCreateTeam?: { perMinute: number; burst: number; maxTeams: number };
  /**
   * After a member's Subscribe or WatchTeam stream was cut for not reading, its reopen of the
   * same kind within this window is refused (rule slow-consumer-backoff). Default 5 s; 0: off.
   */
  slowConsumerBackoffMs?: number;
  /** WatchTeam streams one team may have open, per process. Default 64; 0: no limit. */
  maxWatchesPerTeam?: number;
  /** Active observers one team may have. Default 8; 0: no limit. */
  maxObserversPerTeam?: number;
  /**
   * Serve gRPC calls (every unary method, and Subscribe) on the bare HTTP/2 stream, through
   * the same implementation and interceptors as connect-node but without its generic
   * pipeline. false: every call through connect-node (GRPC_FAST_PATH=0). Default true.
   */
  grpcFastPath?: boolean;
  /** When set, GET /metrics needs it as a bearer token; unset, /metrics is open like health. */
  metricsToken?: string | undefined;
  /** Database pings behind health (defaults: every 2 s, a ping slower than 1 s fails). */
  health?: { pingIntervalMs?: number; pingTimeoutMs?: number };
  /**
   * Web origins (e.g. "https://ops.example.com") whose pages may call the service
   * (CORS). Default none: only the console served at `/` by this server, and clients that
   * are not browsers.
   */
  consoleAllowedOrigins?: readonly string[];
  /**
   * Names browsers may reach the server by (the Host header; DNS rebinding, http/host-guard.ts),
   * besides localhost, *.localhost, IP addresses and the hosts of `consoleAllowedOrigins`.
   * Default none. Clients that are not browsers may use any name.
   */
  allowedHosts?: readonly string[];
}

export interface App {
  /** Registers every service on a Connect router (the HTTP adapter, createRouterTransport). */
  routes(router: ConnectRouter): void;
  /**
   * The Node request handler for the HTTP server: every service through connect
   * (http/connect-adapter.ts), with limits and context values, and /mcp beside them.
   */
  nodeHandler(): NodeHandler;
  /**
   * HTTP/2 streams the app serves itself, before Node builds its compatibility objects
   * (gRPC calls of TeamService, grpc/grpc-calls.ts): give it to the HTTP server as
   * `rawStreams`. Undefined when the fast path is turned off.
   */
  rawStreams(): RawStreams | undefined;
  /**
   * HTTP/2 streams whose body the server reads whole before it starts `nodeHandler()` for
   * them (http/held-bodies.ts): give it to the HTTP server as `wholeBodies`.
   */
  wholeBodies(): WholeBodies;
  /** Live subscriptions of this process. */
  readonly hub: InboxHub;
  /** AwaitRequest calls waiting in this process. */
  readonly waiters: RequestWaiters;
  /** WatchTeam streams of this process. */
  readonly teams: TeamHub;
  /** Expires overdue requests (runs on a timer until close()). */
  readonly sweeper: ExpirySweeper;
  /** Deletes data past its retention age (runs on a timer until close()). */
  readonly retention: RetentionJob;
  /** Announces presence transitions and releases absent owners' tasks (on a timer until close()). */
  readonly presence: PresenceJob;
  /** Fills the search index behind the sends (migration 013). */
  readonly searchIndexer: SearchIndexer;
  /** grpc.health.v1 status (NOT_SERVING once beginStop() was called). */
  readonly health: HealthMonitor;
  /** The Prometheus instruments (GET /metrics); give them to the HTTP server too. */
  readonly metrics: Metrics;
  /**
   * A graceful stop begins: health turns NOT_SERVING and waiting AwaitRequest calls answer
   * at once with the record as it stands (still pending), instead of holding the stop.
   */
  beginStop(): void;
  /** Resolves when the process hears other processes' events (await before serving). */
  readonly ready: Promise<void>;
  /** Stops background work (sweeper, listener). Call after the server stops taking calls. */
  close(): Promise<void>;
}

/**
 * The service, independent of any transport: tests mount it on an in-memory transport or
 * on a real server, main.ts on the one-port HTTP server.
 */
export function createApp(options: AppOptions): App {
  const { db, logger } = options;
  const callers = createCallerCache({
    ttlMs: options.callerCacheTtlMs ?? 10_000,
    maxEntries: 10_000,
  });
  // Every stored message wakes its team's feed (here, or from another process through the
  // bus): the search indexer hears the same wake-ups (migration 013).
  const searchIndexer = startSearchIndexer({ db, logger });
  // Local wake-ups, wrapped so that other server processes on the same database hear too.
  const bus = createClusterBus({
    db,
    hub: createInboxHub(),
    waiters: createRequestWaiters(),
    teams: withWakeHook(createTeamHub(), searchIndexer.poke),
    logger,
    onMemberEnded: (id) => callers.forgetMember(id),
    onMissedEvents: () => callers.clear(),
  });
  const { hub, waiters, teams } = bus;
  const metrics = createMetrics();
  metrics.setSources({
    subscriptions: () => hub.size,
    backlog: () => inboxBacklog(db),
    requests: () => requestsByStatus(db),
    pool: () => db.connections(),
    onScrapeError: (err) => logger.warn({ event: "metrics_query_failed", err }, "scrape query"),
  });
  const deps = { db, hub, waiters, teams };
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 15_000;
  const maxPerMember = options.maxSubscriptionsPerMember ?? 16;
  const presenceOptions = options.presence ?? DEFAULT_PRESENCE;
  // A member is written as seen often enough for the online window to hold between writes.
  const touch = createTouchThrottle(db, Math.min(10_000, (presenceOptions.onlineS * 1000) / 4));
  const openCreateTeam = options.openCreateTeam ?? { perMinute: 10, burst: 10, maxTeams: 1_000 };
  const throttle = createAuthThrottle(
    options.authFailures ?? { perSecond: 10, burst: 20, unknownTtlMs: 60_000 },
  );
  const backoff = createSlowConsumerBackoff(options.slowConsumerBackoffMs ?? 5_000);
  const deliveries = createDeliveries({
    db,
    hub,
    heartbeatIntervalMs,
    maxPerMember,
    metrics,
    backoff,
  });
  const impl = {
    ...membershipHandlers({
      ...deps,
      maxTeams: options.adminToken === undefined ? openCreateTeam.maxTeams : 0,
      maxObservers: options.maxObserversPerTeam ?? 8,
      presence: presenceOptions,
    }),
    ...messagingHandlers({
      ...deps,
      protocols: options.protocols ?? defaultProtocolConfig,
      backlog: options.inboxBacklog ?? DEFAULT_BACKLOG_LIMITS,
    }),
    ...subscribeHandler(deliveries),
    ...requestHandlers(deps),
    ...taskHandlers(deps),
    ...leaseHandlers({
      db,
      hub,
      leaseTtls: options.leaseTtls ?? DEFAULT_LEASE_TTLS,
      maxLeasesPerMember: options.maxLeasesPerMember ?? DEFAULT_MAX_LEASES_PER_MEMBER,
    }),
    ...attemptHandlers(deps),
    ...historyHandlers({ db }),
    ...historyExportHandlers({
      db,
      signingKey: options.exportSigningKey,
      importMaxBytes: options.importMaxBytes ?? IMPORT_MAX_BYTES_DEFAULT,
    }),
    ...watchHandler({
      db,
      teams,
      heartbeatIntervalMs,
      maxPerMember,
      maxPerTeam: options.maxWatchesPerTeam ?? 64,
      metrics,
      backoff,
    }),
  };
  const sweeper = startExpirySweeper({
    ...deps,
    logger,
    intervalMs: options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS,
  });
  const retention = startRetentionJob({
    db,
    logger,
    ...(options.retention ?? { days: 30, journalDays: 30, intervalMs: 3_600_000 }),
  });
  const presence = startPresenceJob({ ...deps, logger, presence: presenceOptions });
  const health = createHealthMonitor({
    db,
    logger,
    services: [TeamService.typeName],
    ...options.health,
  });
  // Made once: routes() runs for every router that mounts the service (connect-node's, and
  // /mcp's in-process one per request), and state such as the send-rate buckets must be
  // the same for all of them — a limiter per router let /mcp send without limit.
  const interceptors = [
    // Outermost first: metrics see every call's end as the client does (mapped errors).
    metricsInterceptor(metrics),
    // Errors of every later step are mapped; rules see the caller.
    errorMappingInterceptor(logger),
    authInterceptor({
      db,
      adminToken: options.adminToken,
      cache: callers,
      touch,
      throttle,
      createTeamRate: openCreateTeam,
    }),
    // Before the journal: a flood of refused sends must not become journal lines.
    sendRateInterceptor(options.sendRate ?? { perSecond: 100, burst: 200 }),
    // After auth (an attempt is a member's), before the rules (it journals their refusals).
    attemptsJournalInterceptor(db, logger),
    rulesInterceptor(),
  ];
  const app: App = {
    hub,
    waiters,
    teams,
    sweeper,
    retention,
    presence,
    searchIndexer,
    health,
    metrics,
    ready: bus.ready,
    beginStop() {
      health.shutdown();
      waiters.close();
    },
    async close() {
      health.shutdown();
      await sweeper.stop();
      await retention.stop();
      await presence.stop();
      await searchIndexer.stop();
      await bus.close();
    },
    routes(router) {
      router.service(TeamService, impl, { interceptors });
      // Health and reflection take no token (the interceptors above are TeamService's only).
      serveHealth(router, health);
      serveReflection(router, [file_team_v1_rule_violation]);
    },
    nodeHandler() {
      // MCP for LLM agents on the same port, its tools through these same routes.
      const mcp = createMcpEndpoint({
        rpcTransport: () =>
          inProcessRpcTransport({
            service: TeamService,
            impl,
            interceptors,
            clientInterceptors: [teamErrorInterceptor],
            // Streams (Subscribe for wait_for_messages) through a router of these routes.
            streams: createRouterTransport((router) => app.routes(router), {
              transport: { interceptors: [teamErrorInterceptor] },
            }),
          }),
        authenticate: (token, address) =>
          authenticate({ db, cache: callers, throttle }, token, address),
        readMaxBytes: READ_MAX_BYTES,
        maxWaitsPerMember: options.maxMcpWaitsPerMember ?? 4,
        metrics,
        logger,
      });
      const scrape = createMetricsEndpoint(metrics, options.metricsToken);
      const connect = createConnectAdapter({
        routes: (router) => app.routes(router),
        readMaxBytes: READ_MAX_BYTES,
        contextValues: contextValuesFor,
        fallback: (req, res) => {
          const path = req.url?.split("?")[0];
          if (path === MCP_PATH) return mcp(req, res);
          if (path === METRICS_PATH) return scrape(req, res);
          res.writeHead(404);
          res.end();
        },
        logger,
      });
      // A browser that reached us by a name we are not known by is refused first (DNS
      // rebinding: even the console's files), then come the console's files at `/`, and the
      // browser's cross-origin rules for the rest.
      const consoleOrigins = options.consoleAllowedOrigins ?? [];
      const hosts = createHostGuard([
        ...(options.allowedHosts ?? []),
        ...consoleOrigins.map((origin) => new URL(origin).hostname),
      ]);
      const consoleFiles = loadConsoleAssets();
      const origins = createOriginGuard(consoleOrigins);
      return (req, res) => {
        if (hosts.answer(req, res) || consoleFiles.serve(req, res) || origins.answer(req, res)) {
          return;
        }
        connect(req, res);
      };
    },
    wholeBodies() {
      return wholeBodyRoutes((router) => app.routes(router), READ_MAX_BYTES);
    },
    rawStreams() {
      if (options.grpcFastPath === false) return undefined;
      return createGrpcCalls({
        service: TeamService,
        impl,
        // The same array router.service() gets above: one pipeline for both paths.
        pipeline: {
          interceptors,
          readMaxBytes: READ_MAX_BYTES,
          acceptCompression: ACCEPT_COMPRESSION,
          contextValues: (cut, pressure, peer) =>
            new CallValues()
              .set(responseCutKey, cut)
              .set(writePressureKey, pressure)
              .set(peerAddressKey, peer),
        },
        logger,
      });
    },
  };
  return app;
}
