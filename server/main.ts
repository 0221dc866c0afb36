import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createApp } from "./app.js";
import { type Config, parseConfig } from "./config.js";
import { openDatabase } from "./database-from-config.js";
import { loadSigningKey } from "./export/signing-key.js";
import { startServer } from "./http/http-server.js";
import { presenceIntervalMs } from "./jobs/presence.js";
import { createLogger, type Logger } from "./logger.js";
import { assertPortFree } from "./port-check.js";

/**
 * Entry point: config -> database (migrated) -> one-port server. SIGINT/SIGTERM stop it
 * gracefully: streams end cleanly, calls in flight finish, then the database is closed.
 */
export async function run(
  config: Config,
  logger: Logger,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const started = Date.now();
  await assertPortFree(config.host, config.port);
  // The embedded database takes seconds to start: say so, or the terminal looks hung.
  logger.info(
    {
      event: "starting",
      database: config.databaseUrl ? "postgres" : "embedded",
      ...(config.databaseUrl ? {} : { dataDir: config.dataDir }),
    },
    config.databaseUrl
      ? "team-protocols starting: connecting to PostgreSQL and migrating"
      : `team-protocols starting: opening the embedded database in ${config.dataDir} (about 10 s)`,
  );
  const { db, applied } = await openDatabase(config, logger);
  const app = createApp({
    db,
    logger,
    adminToken: config.adminToken,
    exportSigningKey: loadSigningKey({
      configured: config.exportSigningKey,
      dataDir: db.kind === "embedded" ? config.dataDir : undefined,
    }),
    importMaxBytes: config.importMaxBytes,
    metricsToken: config.metricsToken,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    callerCacheTtlMs: config.callerCacheTtlMs,
    leaseTtls: { defaultMs: config.leaseTtlDefaultS * 1000, maxMs: config.leaseTtlMaxS * 1000 },
    maxLeasesPerMember: config.maxLeasesPerMember,
    presence: {
      onlineS: config.presenceOnlineS,
      offlineS: config.presenceOfflineS,
      taskOwnerTimeoutS: config.taskOwnerTimeoutS,
      intervalMs: presenceIntervalMs(config.presenceOnlineS),
    },
    maxSubscriptionsPerMember: config.maxSubscriptionsPerMember,
    maxMcpWaitsPerMember: config.maxMcpWaitsPerMember,
    maxWatchesPerTeam: config.maxWatchesPerTeam,
    slowConsumerBackoffMs: config.slowConsumerBackoffMs,
    maxObserversPerTeam: config.maxObserversPerTeam,
    openCreateTeam: {
      perMinute: config.createTeamRatePerMin,
      burst: config.createTeamBurst,
      maxTeams: config.maxTeams,
    },
    authFailures: {
      perSecond: config.authFailuresPerSec,
      burst: config.authFailuresBurst,
      unknownTtlMs: config.authUnknownTokenTtlMs,
    },
    consoleAllowedOrigins: config.consoleAllowedOrigins,
    grpcFastPath: config.grpcFastPath,
    // The bound address is a name the operator chose: browsers may use it.
    allowedHosts: [...config.allowedHosts, config.host],
    inboxBacklog: {
      maxMessages: config.maxInboxBacklog,
      maxBytes: config.maxInboxBacklogBytes,
    },
    sendRate: { perSecond: config.sendRatePerSec, burst: config.sendBurst },
    retention: {
      days: config.retentionDays,
      journalDays: config.journalRetentionDays,
      intervalMs: config.retentionIntervalMs,
    },
    protocols: {
      defaultTtlMs: {
        shutdown: config.shutdownTtlMs,
        plan_approval: config.planApprovalTtlMs,
        task_claim: config.taskClaimTtlMs,
        task_handoff: config.taskHandoffTtlMs,
        result_signoff: config.resultSignoffTtlMs,
        permission: config.permissionTtlMs,
      },
    },
  });
  await app.ready;
  const handler = app.nodeHandler();
  const server = await startServer({
    handler,
    rawStreams: app.rawStreams(),
    wholeBodies: app.wholeBodies(),
    host: config.host,
    port: config.port,
    logger,
    maxStreamsPerConnection: config.maxStreamsPerConnection,
    metrics: app.metrics,
    headersTimeoutMs: config.headersTimeoutMs,
    slowConsumerTimeoutMs: config.slowConsumerTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    idleConnectionTimeoutMs: config.idleConnectionTimeoutMs,
    maxConnections: config.maxConnections,
  });
  // Before the start line: whoever waits for that line (a supervisor, a test) has seen this.
  if (config.adminToken === undefined && !isLoopback(config.host)) {
    logger.warn(
      { event: "create_team_open", host: config.host },
      `CreateTeam is open to anyone who reaches ${server.url} (within CREATE_TEAM_RATE_PER_MIN ` +
        "and MAX_TEAMS): set TEAM_ADMIN_TOKEN when listening beyond loopback",
    );
  }
  logger.info(
    {
      event: "start",
      url: server.url,
      database: db.kind,
      ...(db.kind === "embedded" ? { dataDir: config.dataDir } : {}),
      migrationsApplied: applied,
      adminTokenRequired: config.adminToken !== undefined,
      startupMs: Date.now() - started,
    },
    `team-protocols listening on ${server.url}`,
  );
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      const t = Date.now();
      // NOT_SERVING first, so health checkers stop routing calls here while they drain;
      // AwaitRequest waiters answer now instead of at their deadline.
      app.beginStop();
      await server.close(config.shutdownGraceMs, () => app.hub.endAll());
      await app.close();
      await closeWithin(db.close(), config.shutdownGraceMs, logger);
      logger.info({ event: "stop", stopMs: Date.now() - t }, "team-protocols stopped");
    })();
    return stopping;
  };
  return { url: server.url, stop };
}

/** The database may hang on close (a lost connection): stop waiting after `ms`. */
async function closeWithin(closing: Promise<void>, ms: number, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  const result = await Promise.race([closing.then(() => "closed" as const), late]);
  clearTimeout(timer);
  if (result === "late")
    logger.warn({ event: "db_close_timeout" }, "database did not close in time");
}

/** The server process: flags and environment -> run() until SIGINT/SIGTERM. Also `team serve`. */
export async function main(argv: string[], programName = "team-protocols"): Promise<void> {
  let config: Config;
  try {
    config = parseConfig(argv, process.env, programName);
  } catch (err) {
    // commander has printed its own errors (and --help); anything else is printed here.
    const e = err as { exitCode?: number; code?: string; message?: string };
    if (!e.code?.startsWith("commander.")) process.stderr.write(`error: ${e.message}\n`);
    process.exit(e.exitCode ?? 2);
  }
  const logger = createLogger(config.logLevel);
  try {
    const { stop } = await run(config, logger);
    // `on`, not `once`: Ctrl-C under `npm start` delivers SIGINT twice (the terminal signals the
    // process group, then npm forwards its own); a second signal must not kill the graceful stop.
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.on(signal, () => {
        logger.info({ event: "signal", signal }, "stopping");
        stop().then(
          () => process.exit(0),
          (err) => {
            logger.error({ event: "stop_failed", err }, "stop failed");
            process.exit(1);
          },
        );
      });
    }
  } catch (err) {
    // A mistake in the setup (port taken, data dir in use) is one plain line, not a log
    // record with a stack: it is for the person who typed the command.
    if (SETUP_MISTAKES.has((err as { code?: string }).code ?? "")) {
      process.stderr.write(`${programName}: could not start: ${(err as Error).message}\n`);
      process.exit(1);
    }
    logger.fatal({ event: "start_failed", err }, `could not start: ${(err as Error).message}`);
    process.exit(1);
  }
}

/** Error codes of start-up failures the user fixes by changing the command (see above). */
const SETUP_MISTAKES = new Set(["PORT_TAKEN", "DATA_DIR_IN_USE"]);

const isEntryPoint =
  process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isEntryPoint) await main(process.argv.slice(2));

/** An address only this machine can reach. */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\./.test(h);
}
