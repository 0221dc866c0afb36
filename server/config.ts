import { Command, InvalidArgumentError, Option } from "commander";
import {
  DEFAULT_BACKLOG_LIMITS,
  IMPORT_MAX_BYTES_DEFAULT,
  MAX_TTL_MS,
  MIN_TTL_MS,
} from "./domain/limits.js";
import { ALLOWED_HOSTS_ENV } from "./http/host-guard.js";
import { parseDatabaseUrl } from "./store/database-url.js";
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS } from "./store/pg-database.js";

export interface Config {
  host: string;
  port: number;
  /** A real PostgreSQL; unset: the embedded database in dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  adminToken: string | undefined;
  /** EXPORT_SIGNING_KEY: an Ed25519 private key (PEM) or its file's path (environment only). */
  exportSigningKey: string | undefined;
  /** When set, GET /metrics needs it as a bearer token (environment only, like adminToken). */
  metricsToken: string | undefined;
  heartbeatIntervalMs: number;
  shutdownTtlMs: number;
  planApprovalTtlMs: number;
  taskClaimTtlMs: number;
  taskHandoffTtlMs: number;
  resultSignoffTtlMs: number;
  permissionTtlMs: number;
  shutdownGraceMs: number;
  dbPoolSize: number;
  dbStatementTimeoutMs: number;
  dbConnectTimeoutMs: number;
  callerCacheTtlMs: number;
  leaseTtlDefaultS: number;
  leaseTtlMaxS: number;
  /** Live leases one member may hold at once (0: no limit). */
  maxLeasesPerMember: number;
  presenceOnlineS: number;
  presenceOfflineS: number;
  /** 0: an absent owner keeps its tasks. */
  taskOwnerTimeoutS: number;
  maxSubscriptionsPerMember: number;
  maxMcpWaitsPerMember: number;
  maxWatchesPerTeam: number;
  maxObserversPerTeam: number;
  createTeamRatePerMin: number;
  createTeamBurst: number;
  maxTeams: number;
  authFailuresPerSec: number;
  authFailuresBurst: number;
  authUnknownTokenTtlMs: number;
  maxStreamsPerConnection: number;
  maxInboxBacklog: number;
  maxInboxBacklogBytes: number;
  headersTimeoutMs: number;
  /** A response whose client reads nothing for this long is cut (the slow-consumer guard). */
  slowConsumerTimeoutMs: number;
  /** After such a cut, the member's reopen of that kind of stream is refused for this long. */
  slowConsumerBackoffMs: number;
  requestTimeoutMs: number;
  /** An HTTP/2 connection with no open stream for this long is closed (GOAWAY). */
  idleConnectionTimeoutMs: number;
  /** Open connections; at the cap a new one retires the longest-idle HTTP/2 connection, else is refused at accept. */
  maxConnections: number;
  sendRatePerSec: number;
  sendBurst: number;
  retentionDays: number;
  /** The largest bundle ImportTeam loads, in bytes (its chunks summed). */
  importMaxBytes: number;
  journalRetentionDays: number;
  retentionIntervalMs: number;
  /** Web origins whose pages may call the service (CORS); empty: none but our own console. */
  consoleAllowedOrigins: string[];
  /** gRPC calls on the bare HTTP/2 stream (the call pipeline); false: all through connect-node. */
  grpcFastPath: boolean;
  /** Names browsers may reach the server by, besides localhost and IP addresses (DNS rebinding). */
  allowedHosts: string[];
  logLevel: string;
}

/** A whole number in [min, max]; commander prints the error, naming the variable. */
const wholeNumber =
  (name: string, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  (value: string) => {
    const n = value.trim() === "" ? Number.NaN : Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        `${name} must be a whole number from ${min} to ${max}, got "${value}"`,
      );
    }
    return n;
  };

/** 1 or 0 (also true / false). */
const onOff = (name: string) => (value: string) => {
  const v = value.trim().toLowerCase();
  if (v === "1" || v === "true") return true;
  if (v === "0" || v === "false") return false;
  throw new InvalidArgumentError(`${name} must be 1 or 0, got "${value}"`);
};

const positiveInt = (name: string) => wholeNumber(name);
// Request deadlines stay within the bounds a per-request ttl may take.
const ttl = (name: string) => wholeNumber(name, MIN_TTL_MS, MAX_TTL_MS);

/** A DATABASE_URL we can use (one host or several), refused at start with the reason. */
const databaseUrl = (value: string) => {
  if (value.trim() === "") return "";
  try {
    parseDatabaseUrl(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return value;
};
/**
 * A comma-separated list of web origins, each exactly `scheme://host[:port]` (what a browser
 * sends in its Origin header): no path, no wildcard, so that an allowed origin is a choice.
 */
const originList = (name: string) => (value: string) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "")
    .map((item) => {
      let url: URL | undefined;
      try {
        url = new URL(item);
      } catch {}
      if (
        !url ||
        !["http:", "https:"].includes(url.protocol) ||
        url.origin !== item.toLowerCase()
      ) {
        throw new InvalidArgumentError(
          `${name} takes web origins such as https://ops.example.com (scheme, host and ` +
            `port only, comma-separated), got "${item}"`,
        );
      }
      return url.origin;
    });

/**
 * A comma-separated list of host names (what a browser sends in Host, without the port):
 * letters, digits, dots, dashes; no wildcard, so that each allowed name is a choice.
 */
const hostList = (name: string) => (value: string) =>
  value
    .split(",")
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== "")
    .map((item) => {
      if (!/^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/.test(item)) {
        throw new InvalidArgumentError(
          `${name} takes host names such as team.example.com (no scheme, port or wildcard, ` +
            `comma-separated), got "${item}"`,
        );
      }
      return item;
    });

const ADMIN_TOKEN_ENV = "TEAM_ADMIN_TOKEN";
const METRICS_TOKEN_ENV = "METRICS_TOKEN";
const EXPORT_SIGNING_KEY_ENV = "EXPORT_SIGNING_KEY";

/**
 * Configuration from flags, then environment variables, then defaults (commander).
 * The admin and metrics tokens and the export signing key are read from the environment only,
 * so they never show in `ps`.
 */
export function parseConfig(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  /** How --help and errors name the program: `team serve` when run through the CLI. */
  programName = "team-protocols",
): Config {
  const program = createProgram(programName);
  // commander reads process.env for .env(); give it the env we were handed.
  const saved = process.env;
  process.env = env;
  try {
    program.parse(argv, { from: "user" });
  } finally {
    process.env = saved;
  }
  return toConfig(program.opts(), env);
}

/**
 * Every environment variable the server reads (the options' and TEAM_ADMIN_TOKEN), for
 * tools that start a server and must not let the caller's shell leak into it.
 */
export function configEnvNames(): string[] {
  const fromOptions = createProgram().options.flatMap((o) => (o.envVar ? [o.envVar] : []));
  return [...fromOptions, ADMIN_TOKEN_ENV, METRICS_TOKEN_ENV, EXPORT_SIGNING_KEY_ENV];
}

function createProgram(name = "team-protocols"): Command {
  return new Command(name)
    .description("Durable inboxes and server-enforced protocols for teams of AI agents.")
    .addOption(new Option("--host <host>", "address to listen on").env("HOST").default("127.0.0.1"))
    .addOption(
      new Option("--port <port>", "port for gRPC, gRPC-Web and Connect (HTTP/1.1 and HTTP/2)")
        .env("PORT")
        .default(8080)
        .argParser(wholeNumber("PORT (0 picks a free port)", 0, 65_535)),
    )
    .addOption(
      new Option(
        "--database-url <url>",
        "PostgreSQL connection URL, one host or several (postgres://h1:5432,h2:5432/db); " +
          "unset: embedded database",
      )
        .env("DATABASE_URL")
        .argParser(databaseUrl),
    )
    .addOption(
      new Option("--data-dir <dir>", "folder of the embedded database")
        .env("DATA_DIR")
        .default("./data"),
    )
    .addOption(
      new Option("--heartbeat-interval-ms <ms>", "heartbeat on idle subscriptions")
        .env("HEARTBEAT_INTERVAL_MS")
        .default(15_000)
        .argParser(positiveInt("HEARTBEAT_INTERVAL_MS")),
    )
    .addOption(
      new Option("--shutdown-ttl-ms <ms>", "time to answer a shutdown_request without a ttl")
        .env("SHUTDOWN_TTL_MS")
        .default(300_000)
        .argParser(ttl("SHUTDOWN_TTL_MS")),
    )
    .addOption(
      new Option(
        "--plan-approval-ttl-ms <ms>",
        "time to answer a plan_approval_request without a ttl",
      )
        .env("PLAN_APPROVAL_TTL_MS")
        .default(1_800_000)
        .argParser(ttl("PLAN_APPROVAL_TTL_MS")),
    )
    .addOption(
      new Option("--task-claim-ttl-ms <ms>", "time to answer a task_claim_request without a ttl")
        .env("TASK_CLAIM_TTL_MS")
        .default(600_000)
        .argParser(ttl("TASK_CLAIM_TTL_MS")),
    )
    .addOption(
      new Option(
        "--task-handoff-ttl-ms <ms>",
        "time to answer a task_handoff_request without a ttl",
      )
        .env("TASK_HANDOFF_TTL_MS")
        .default(600_000)
        .argParser(ttl("TASK_HANDOFF_TTL_MS")),
    )
    .addOption(
      new Option(
        "--result-signoff-ttl-ms <ms>",
        "time to answer a result_signoff_request without a ttl",
      )
        .env("RESULT_SIGNOFF_TTL_MS")
        .default(1_800_000)
        .argParser(ttl("RESULT_SIGNOFF_TTL_MS")),
    )
    .addOption(
      new Option("--permission-ttl-ms <ms>", "time to answer a permission_request without a ttl")
        .env("PERMISSION_TTL_MS")
        .default(300_000)
        .argParser(ttl("PERMISSION_TTL_MS")),
    )
    .addOption(
      new Option("--shutdown-grace-ms <ms>", "how long calls may finish at stop")
        .env("SHUTDOWN_GRACE_MS")
        .default(10_000)
        .argParser(positiveInt("SHUTDOWN_GRACE_MS")),
    )
    .addOption(
      new Option("--db-pool-size <n>", "PostgreSQL connections")
        .env("DB_POOL_SIZE")
        .default(20)
        .argParser(positiveInt("DB_POOL_SIZE")),
    )
    .addOption(
      new Option(
        "--db-statement-timeout-ms <ms>",
        "a database statement taking longer is cancelled, and a commit waiting that long " +
          "(+5 s) for its synchronous standby is given up; the call fails with Unavailable",
      )
        .env("DB_STATEMENT_TIMEOUT_MS")
        .default(DEFAULT_STATEMENT_TIMEOUT_MS)
        .argParser(wholeNumber("DB_STATEMENT_TIMEOUT_MS", 100)),
    )
    .addOption(
      new Option(
        "--db-connect-timeout-ms <ms>",
        "a database host that has not accepted a connection by then counts as down",
      )
        .env("DB_CONNECT_TIMEOUT_MS")
        .default(DEFAULT_CONNECT_TIMEOUT_MS)
        .argParser(wholeNumber("DB_CONNECT_TIMEOUT_MS", 100)),
    )
    .addOption(
      new Option(
        "--lease-ttl-default-s <s>",
        "a lease's ttl when AcquireLease or RenewLease gives none",
      )
        .env("LEASE_TTL_DEFAULT_S")
        .default(600)
        .argParser(positiveInt("LEASE_TTL_DEFAULT_S")),
    )
    .addOption(
      new Option(
        "--lease-ttl-max-s <s>",
        "the longest ttl a lease may be given (then it is renewed)",
      )
        .env("LEASE_TTL_MAX_S")
        .default(14_400)
        .argParser(positiveInt("LEASE_TTL_MAX_S")),
    )
    .addOption(
      new Option(
        "--max-leases-per-member <n>",
        "live leases one member may hold at once (0: no limit)",
      )
        .env("MAX_LEASES_PER_MEMBER")
        .default(64)
        .argParser(wholeNumber("MAX_LEASES_PER_MEMBER")),
    )
    .addOption(
      new Option(
        "--presence-online-s <s>",
        "a member seen (stream, MCP, hook or any call) within this many seconds is online",
      )
        .env("PRESENCE_ONLINE_S")
        .default(60)
        .argParser(wholeNumber("PRESENCE_ONLINE_S", 1)),
    )
    .addOption(
      new Option(
        "--presence-offline-s <s>",
        "a member not seen for this many seconds is offline (idle before)",
      )
        .env("PRESENCE_OFFLINE_S")
        .default(900)
        .argParser(wholeNumber("PRESENCE_OFFLINE_S", 1)),
    )
    .addOption(
      new Option(
        "--task-owner-timeout-s <s>",
        "an owner offline this many seconds has its claimed tasks released to unowned (0: never)",
      )
        .env("TASK_OWNER_TIMEOUT_S")
        .default(0)
        .argParser(positiveInt("TASK_OWNER_TIMEOUT_S")),
    )
    .addOption(
      new Option(
        "--caller-cache-ttl-ms <ms>",
        "how long an active member's token is trusted without a database look-up " +
          "(revocations take effect at once; 0: look up every call)",
      )
        .env("CALLER_CACHE_TTL_MS")
        .default(10_000)
        .argParser(positiveInt("CALLER_CACHE_TTL_MS")),
    )
    .addOption(
      new Option(
        "--max-subscriptions-per-member <n>",
        "Subscribe streams one member may hold open at once (per server process)",
      )
        .env("MAX_SUBSCRIPTIONS_PER_MEMBER")
        .default(16)
        .argParser(wholeNumber("MAX_SUBSCRIPTIONS_PER_MEMBER", 1)),
    )
    .addOption(
      new Option(
        "--create-team-rate-per-min <n>",
        "without TEAM_ADMIN_TOKEN: teams one client address may create per minute (0: no limit)",
      )
        .env("CREATE_TEAM_RATE_PER_MIN")
        .default(10)
        .argParser(wholeNumber("CREATE_TEAM_RATE_PER_MIN")),
    )
    .addOption(
      new Option(
        "--create-team-burst <n>",
        "without TEAM_ADMIN_TOKEN: teams one client address may create at once",
      )
        .env("CREATE_TEAM_BURST")
        .default(10)
        .argParser(wholeNumber("CREATE_TEAM_BURST", 1)),
    )
    .addOption(
      new Option(
        "--max-teams <n>",
        "without TEAM_ADMIN_TOKEN: teams the database may hold before CreateTeam is refused (0: no ceiling)",
      )
        .env("MAX_TEAMS")
        .default(1_000)
        .argParser(wholeNumber("MAX_TEAMS")),
    )
    .addOption(
      new Option(
        "--auth-failures-per-sec <n>",
        "failed token look-ups one client address may make per second before it is refused " +
          "without a look-up (0: no limit)",
      )
        .env("AUTH_FAILURES_PER_SEC")
        .default(10)
        .argParser(wholeNumber("AUTH_FAILURES_PER_SEC")),
    )
    .addOption(
      new Option("--auth-failures-burst <n>", "failed token look-ups one address may make at once")
        .env("AUTH_FAILURES_BURST")
        .default(20)
        .argParser(wholeNumber("AUTH_FAILURES_BURST", 1)),
    )
    .addOption(
      new Option(
        "--auth-unknown-token-ttl-ms <ms>",
        "how long a token found unknown is refused again without a database look-up",
      )
        .env("AUTH_UNKNOWN_TOKEN_TTL_MS")
        .default(60_000)
        .argParser(wholeNumber("AUTH_UNKNOWN_TOKEN_TTL_MS")),
    )
    .addOption(
      new Option(
        "--max-watches-per-team <n>",
        "WatchTeam streams one team's members may hold open at once (per server process; 0: no limit)",
      )
        .env("MAX_WATCHES_PER_TEAM")
        .default(64)
        .argParser(wholeNumber("MAX_WATCHES_PER_TEAM")),
    )
    .addOption(
      new Option("--max-observers-per-team <n>", "active observers one team may have (0: no limit)")
        .env("MAX_OBSERVERS_PER_TEAM")
        .default(8)
        .argParser(wholeNumber("MAX_OBSERVERS_PER_TEAM")),
    )
    .addOption(
      new Option(
        "--max-mcp-waits-per-member <n>",
        "wait_for_messages calls over /mcp one member may have pending at once (per server process)",
      )
        .env("MAX_MCP_WAITS_PER_MEMBER")
        .default(4)
        .argParser(wholeNumber("MAX_MCP_WAITS_PER_MEMBER", 1)),
    )
    .addOption(
      new Option(
        "--max-streams-per-connection <n>",
        "concurrent calls a client may open on one HTTP/2 connection",
      )
        .env("MAX_STREAMS_PER_CONNECTION")
        .default(256)
        .argParser(wholeNumber("MAX_STREAMS_PER_CONNECTION", 1)),
    )
    .addOption(
      new Option(
        "--max-inbox-backlog <n>",
        "unacked messages an inbox may hold before sends to it are refused (0: no limit)",
      )
        .env("MAX_INBOX_BACKLOG")
        .default(DEFAULT_BACKLOG_LIMITS.maxMessages)
        .argParser(wholeNumber("MAX_INBOX_BACKLOG")),
    )
    .addOption(
      new Option(
        "--max-inbox-backlog-bytes <n>",
        "bytes of unacked message bodies an inbox may hold before sends to it are refused " +
          "(0: no limit)",
      )
        .env("MAX_INBOX_BACKLOG_BYTES")
        .default(DEFAULT_BACKLOG_LIMITS.maxBytes)
        .argParser(wholeNumber("MAX_INBOX_BACKLOG_BYTES")),
    )
    .addOption(
      new Option(
        "--headers-timeout-ms <ms>",
        "time for a new connection to show its protocol and for HTTP/1.1 headers to arrive",
      )
        .env("HEADERS_TIMEOUT_MS")
        .default(10_000)
        .argParser(wholeNumber("HEADERS_TIMEOUT_MS", 100)),
    )
    .addOption(
      new Option(
        "--slow-consumer-timeout-ms <ms>",
        "a response whose client reads nothing for this long is cut (it resumes from its last seq)",
      )
        .env("SLOW_CONSUMER_TIMEOUT_MS")
        .default(30_000)
        .argParser(wholeNumber("SLOW_CONSUMER_TIMEOUT_MS", 100)),
    )
    .addOption(
      new Option(
        "--slow-consumer-backoff-ms <ms>",
        "after a stream was cut for not reading, its member's reopen of that kind of stream is refused for this long (0: off)",
      )
        .env("SLOW_CONSUMER_BACKOFF_MS")
        .default(5_000)
        .argParser(wholeNumber("SLOW_CONSUMER_BACKOFF_MS")),
    )
    .addOption(
      new Option(
        "--request-timeout-ms <ms>",
        "time for a whole request to arrive: HTTP/1.1 headers and body, an HTTP/2 request's body",
      )
        .env("REQUEST_TIMEOUT_MS")
        .default(60_000)
        .argParser(wholeNumber("REQUEST_TIMEOUT_MS", 100)),
    )
    .addOption(
      new Option(
        "--idle-connection-timeout-ms <ms>",
        "an HTTP/2 connection with no open call for this long is closed (GOAWAY; PINGs do not count)",
      )
        .env("IDLE_CONNECTION_TIMEOUT_MS")
        .default(300_000)
        .argParser(wholeNumber("IDLE_CONNECTION_TIMEOUT_MS", 100)),
    )
    .addOption(
      new Option(
        "--max-connections <n>",
        "open connections; at the cap a new one retires the longest-idle HTTP/2 connection with no open stream, or is refused at accept when all have one (keep it under ulimit -n)",
      )
        .env("MAX_CONNECTIONS")
        .default(10_000)
        .argParser(wholeNumber("MAX_CONNECTIONS", 1)),
    )
    .addOption(
      new Option("--send-rate <n>", "sends a member may make per second (0: no limit)")
        .env("SEND_RATE_PER_SEC")
        .default(100)
        .argParser(wholeNumber("SEND_RATE_PER_SEC")),
    )
    .addOption(
      new Option("--send-burst <n>", "sends a member may make at once after a pause")
        .env("SEND_BURST")
        .default(200)
        .argParser(wholeNumber("SEND_BURST", 1)),
    )
    .addOption(
      new Option(
        "--retention-days <days>",
        "delete acked messages, finished requests, idempotency keys and member events older " +
          "than this (0: keep)",
      )
        .env("RETENTION_DAYS")
        .default(30)
        .argParser(wholeNumber("RETENTION_DAYS", 0, 36_500)),
    )
    .addOption(
      new Option(
        "--journal-retention-days <days>",
        "delete protocol journal lines older than this (0: keep)",
      )
        .env("JOURNAL_RETENTION_DAYS")
        .default(30)
        .argParser(wholeNumber("JOURNAL_RETENTION_DAYS", 0, 36_500)),
    )
    .addOption(
      new Option(
        "--import-max-bytes <bytes>",
        "the largest bundle ImportTeam loads (all its chunks; default 4 GiB)",
      )
        .env("IMPORT_MAX_BYTES")
        .default(IMPORT_MAX_BYTES_DEFAULT)
        .argParser(wholeNumber("IMPORT_MAX_BYTES", 1)),
    )
    .addOption(
      new Option("--retention-interval-ms <ms>", "how often old data is looked for")
        .env("RETENTION_INTERVAL_MS")
        .default(3_600_000)
        .argParser(wholeNumber("RETENTION_INTERVAL_MS", 1_000)),
    )
    .addOption(
      new Option(
        "--console-allowed-origins <origins>",
        "web origins whose pages may call the service, comma-separated (CORS; default: none)",
      )
        .env("CONSOLE_ALLOWED_ORIGINS")
        .default([])
        .argParser(originList("CONSOLE_ALLOWED_ORIGINS")),
    )
    .addOption(
      new Option(
        "--grpc-fast-path <on>",
        "serve gRPC calls on the bare HTTP/2 stream (1) or all through connect-node (0)",
      )
        .env("GRPC_FAST_PATH")
        .default(true)
        .argParser(onOff("GRPC_FAST_PATH")),
    )
    .addOption(
      new Option(
        "--allowed-hosts <names>",
        "names browsers may reach the server by, comma-separated, besides localhost, IP " +
          "addresses, HOST and the hosts of CONSOLE_ALLOWED_ORIGINS (DNS rebinding; default: none)",
      )
        .env(ALLOWED_HOSTS_ENV)
        .default([])
        .argParser(hostList(ALLOWED_HOSTS_ENV)),
    )
    .addOption(new Option("--log-level <level>", "pino log level").env("LOG_LEVEL").default("info"))
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
}

// biome-ignore lint/suspicious/noExplicitAny: commander's opts() is untyped.
function toConfig(o: Record<string, any>, env: NodeJS.ProcessEnv): Config {
  if (o.leaseTtlDefaultS > o.leaseTtlMaxS) {
    throw new InvalidArgumentError(
      `LEASE_TTL_DEFAULT_S (${o.leaseTtlDefaultS}) must not exceed LEASE_TTL_MAX_S (${o.leaseTtlMaxS})`,
    );
  }
  if (o.presenceOnlineS > o.presenceOfflineS) {
    throw new InvalidArgumentError(
      `PRESENCE_ONLINE_S (${o.presenceOnlineS}) must not exceed PRESENCE_OFFLINE_S (${o.presenceOfflineS})`,
    );
  }
  return {
    host: o.host,
    port: o.port,
    databaseUrl: o.databaseUrl || undefined,
    dataDir: o.dataDir,
    adminToken: env[ADMIN_TOKEN_ENV] || undefined,
    metricsToken: env[METRICS_TOKEN_ENV] || undefined,
    exportSigningKey: env[EXPORT_SIGNING_KEY_ENV] || undefined,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    shutdownTtlMs: o.shutdownTtlMs,
    planApprovalTtlMs: o.planApprovalTtlMs,
    taskClaimTtlMs: o.taskClaimTtlMs,
    taskHandoffTtlMs: o.taskHandoffTtlMs,
    resultSignoffTtlMs: o.resultSignoffTtlMs,
    permissionTtlMs: o.permissionTtlMs,
    shutdownGraceMs: o.shutdownGraceMs,
    dbPoolSize: o.dbPoolSize,
    dbStatementTimeoutMs: o.dbStatementTimeoutMs,
    dbConnectTimeoutMs: o.dbConnectTimeoutMs,
    callerCacheTtlMs: o.callerCacheTtlMs,
    leaseTtlDefaultS: o.leaseTtlDefaultS,
    leaseTtlMaxS: o.leaseTtlMaxS,
    maxLeasesPerMember: o.maxLeasesPerMember,
    presenceOnlineS: o.presenceOnlineS,
    presenceOfflineS: o.presenceOfflineS,
    taskOwnerTimeoutS: o.taskOwnerTimeoutS,
    maxSubscriptionsPerMember: o.maxSubscriptionsPerMember,
    maxMcpWaitsPerMember: o.maxMcpWaitsPerMember,
    maxWatchesPerTeam: o.maxWatchesPerTeam,
    maxObserversPerTeam: o.maxObserversPerTeam,
    createTeamRatePerMin: o.createTeamRatePerMin,
    createTeamBurst: o.createTeamBurst,
    maxTeams: o.maxTeams,
    authFailuresPerSec: o.authFailuresPerSec,
    authFailuresBurst: o.authFailuresBurst,
    authUnknownTokenTtlMs: o.authUnknownTokenTtlMs,
    maxStreamsPerConnection: o.maxStreamsPerConnection,
    maxInboxBacklog: o.maxInboxBacklog,
    maxInboxBacklogBytes: o.maxInboxBacklogBytes,
    headersTimeoutMs: o.headersTimeoutMs,
    slowConsumerTimeoutMs: o.slowConsumerTimeoutMs,
    slowConsumerBackoffMs: o.slowConsumerBackoffMs,
    requestTimeoutMs: o.requestTimeoutMs,
    idleConnectionTimeoutMs: o.idleConnectionTimeoutMs,
    maxConnections: o.maxConnections,
    sendRatePerSec: o.sendRate,
    sendBurst: o.sendBurst,
    retentionDays: o.retentionDays,
    importMaxBytes: o.importMaxBytes,
    journalRetentionDays: o.journalRetentionDays,
    retentionIntervalMs: o.retentionIntervalMs,
    consoleAllowedOrigins: o.consoleAllowedOrigins,
    grpcFastPath: o.grpcFastPath,
    allowedHosts: o.allowedHosts,
    logLevel: o.logLevel,
  };
}
