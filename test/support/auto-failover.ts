import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import {
  chownSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { findPostgresBin, privatePostgresUnavailable } from "./private-postgres.js";

/**
 * A pg_auto_failover formation of the test's own: a monitor and `dataNodes` PostgreSQL
 * nodes, each with its keeper (`pg_autoctl run`), on free loopback ports in one temp folder,
 * trust auth, no SSL, run as the `postgres` OS user when we are root. Built once per test
 * run; stop() (or, if the process ends first, an exit handler) kills every process it
 * started, found by process group and by working directory, and deletes the folder.
 *
 * The nemesis: killNode() is the loss of a machine (kill -9 of the keeper and of every
 * PostgreSQL process of that node); startNode() brings it back, and pg_auto_failover makes
 * it a standby of the new primary; switchover() is a planned one.
 */

const run = promisify(execFile);

/** Debian's package that brings pg_autoctl (and the monitor's extension). */
export const AUTO_FAILOVER_PACKAGE = "postgresql-15-auto-failover";

/** Why a formation cannot be built here, or undefined when it can. */
export function autoFailoverUnavailable(): string | undefined {
  const pgMissing = privatePostgresUnavailable();
  if (pgMissing) return pgMissing;
  try {
    execFileSync("pg_autoctl", ["--version"], { stdio: "ignore" });
  } catch {
    return `pg_autoctl is not installed (Debian package ${AUTO_FAILOVER_PACKAGE})`;
  }
  return undefined;
}

/**
 * Monitor settings tuned for a fast failover (defaults: 5 s, 5 s, 2, 2 s, 20 s, 30 s, 10 s).
 * A primary that misses its health checks for node_considered_unhealthy_timeout is failed
 * over; the promoted standby waits primary_demote_timeout for the old primary to demote
 * itself before it takes writes, so the keepers' network_partition_timeout (after which a
 * primary that cannot reach the monitor or its standbys demotes itself) stays below it:
 * two primaries never take writes at once.
 */
export const MONITOR_SETTINGS: Record<string, number> = {
  "pgautofailover.health_check_period": 1000,
  "pgautofailover.health_check_timeout": 1000,
  "pgautofailover.health_check_max_retries": 1,
  "pgautofailover.health_check_retry_delay": 500,
  "pgautofailover.node_considered_unhealthy_timeout": 2000,
  "pgautofailover.primary_demote_timeout": 5000,
  "pgautofailover.startup_grace_period": 2000,
};
/** Seconds; below primary_demote_timeout (default 20 s). */
export const KEEPER_NETWORK_PARTITION_TIMEOUT_S = 3;

/**
 * Small PostgreSQL settings: several servers share a 2-core machine. postgresql.auto.conf is
 * read after the settings pg_auto_failover writes (it sizes shared_buffers to a quarter of
 * the RAM), so these win; standbys get the file with their base backup.
 */
const SMALL_SETTINGS = `listen_addresses = '127.0.0.1'
shared_buffers = '16MB'
work_mem = '4MB'
maintenance_work_mem = '16MB'
effective_cache_size = '128MB'
max_connections = 60
min_wal_size = '32MB'
max_wal_size = '128MB'
logging_collector = off
`;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface FormationNode {
  readonly name: string;
  readonly port: number;
  readonly pgdata: string;
  readonly url: string;
}

export interface NodeState {
  name: string;
  port: number;
  reported: string;
  goal: string;
}

export interface Formation {
  readonly dir: string;
  readonly monitorPort: number;
  readonly nodes: readonly FormationNode[];
  /** postgres://postgres@127.0.0.1:p1,...:pN/postgres?target_session_attrs=read-write */
  readonly databaseUrl: string;
  /** Every node's state as the monitor has it. */
  states(): Promise<NodeState[]>;
  /** Waits until `test` holds for the states (polling the monitor), or fails naming `what`. */
  waitForStates(
    what: string,
    timeoutMs: number,
    test: (s: NodeState[]) => boolean,
  ): Promise<NodeState[]>;
  /** Waits for one primary and every other node a secondary, all settled. */
  waitHealthy(timeoutMs: number): Promise<FormationNode>;
  /** The node whose keeper runs it as primary (settled), or undefined. */
  primary(): Promise<FormationNode | undefined>;
  /** The loss of a machine: SIGKILL to the node's keeper and all its PostgreSQL processes. */
  killNode(node: FormationNode): Promise<void>;
  /** Starts the node's keeper again (it rejoins as a standby). */
  startNode(node: FormationNode): void;
  /** A planned switchover (pg_autoctl perform switchover); resolves when it is done. */
  switchover(): Promise<void>;
  /** The last lines of every log of the formation, for a failure message. */
  logs(lines?: number): string;
  /** Kills everything and deletes the folder. Idempotent. */
  stop(): Promise<void>;
}

export interface FormationOptions {
  /** Data nodes (2 or 3). With 3, number_sync_standbys is 1: every commit is on a standby. */
  dataNodes: number;
  log?: (line: string) => void;
}

export async function startFormation(options: FormationOptions): Promise<Formation> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("no PostgreSQL binaries under /usr/lib/postgresql/*/bin");
  const log = options.log ?? (() => {});
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(os.tmpdir(), "tp-ha-"));
  const postgresUid = asRoot ? Number(execFileSync("id", ["-u", "postgres"]).toString()) : -1;
  if (asRoot) chownSync(dir, postgresUid, 0);

  // pg_autoctl keeps its configuration and state under the XDG folders: ours, in `dir`.
  const env = {
    XDG_CONFIG_HOME: join(dir, "config"),
    XDG_DATA_HOME: join(dir, "share"),
    XDG_RUNTIME_DIR: join(dir, "run"),
    PG_CONFIG: join(bin, "pg_config"),
    PATH: `${bin}:/usr/bin:/bin`,
    PGHOST: "127.0.0.1",
    HOME: dir,
  };
  // As root, everything runs as `postgres` (initdb and postgres refuse root).
  const command = (tool: string, args: string[]): [string, string[]] => {
    const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    return asRoot
      ? ["runuser", ["-u", "postgres", "--", "env", ...envArgs, tool, ...args]]
      : ["env", [...envArgs, tool, ...args]];
  };
  const tool = async (name: string, args: string[], timeoutMs = 120_000) => {
    const [file, argv] = command(name, args);
    try {
      const { stdout, stderr } = await run(file, argv, { cwd: dir, timeout: timeoutMs });
      return `${stdout}${stderr}`;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(
        `${name} ${args.join(" ")} failed: ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`,
      );
    }
  };

  // pg_autoctl falls back to /tmp/pg_autoctl for its pid files when this one is missing.
  mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
  if (asRoot) chownSync(env.XDG_RUNTIME_DIR, postgresUid, 0);

  const keepers = new Map<string, ChildProcess>();
  const logFiles: string[] = [];
  let stopped = false;

  /** Every process started in `dir`: keepers, postgres and backends (cwd is their PGDATA). */
  const processesInDir = (): number[] => {
    const pids: number[] = [];
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        if (readlinkSync(`/proc/${entry}/cwd`).startsWith(dir)) pids.push(Number(entry));
      } catch {} // gone meanwhile, or not ours to read
    }
    return pids;
  };
  const killEverything = () => {
    for (const child of keepers.values()) {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {}
      }
    }
    for (let round = 0; round < 3; round++) {
      const left = processesInDir();
      if (left.length === 0) break;
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
    }
  };
  const emergencyStop = () => {
    killEverything();
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    emergencyStop();
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.on("exit", emergencyStop);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const spawnKeeper = (name: string, pgdata: string) => {
    const logFile = join(dir, `${name}.log`);
    if (!logFiles.includes(logFile)) logFiles.push(logFile);
    const fd = openSync(logFile, "a");
    const [file, argv] = command("pg_autoctl", ["run", "--pgdata", pgdata]);
    // Its own process group: kill(-pid) reaches the keeper and the PostgreSQL it started.
    const child = spawn(file, argv, { cwd: pgdata, detached: true, stdio: ["ignore", fd, fd] });
    closeSync(fd);
    child.unref();
    keepers.set(name, child);
  };

  const monitorPort = await freePort();
  const ports: number[] = [];
  while (ports.length < options.dataNodes) {
    const p = await freePort();
    if (p !== monitorPort && !ports.includes(p)) ports.push(p);
  }
  const monitorData = join(dir, "monitor");
  const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const nodes: FormationNode[] = ports.map((port, i) => ({
    name: `node${i + 1}`,
    port,
    pgdata: join(dir, `node${i + 1}`),
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
  }));

  const initdb = async (pgdata: string) => {
    await tool(join(bin, "initdb"), [
      "-D",
      pgdata,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
    ]);
    writeFileSync(join(pgdata, "postgresql.auto.conf"), SMALL_SETTINGS);
    if (asRoot) chownSync(join(pgdata, "postgresql.auto.conf"), postgresUid, 0);
  };

  const monitorSql = async <R extends object>(text: string): Promise<R[]> => {
    const c = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`,
      connectionTimeoutMillis: 3_000,
    });
    c.on("error", () => {});
    await c.connect();
    try {
      return (await c.query(text)).rows as R[];
    } finally {
      await c.end().catch(() => {});
    }
  };

  const states = async (): Promise<NodeState[]> =>
    monitorSql<NodeState>(
      `SELECT nodename AS name, nodeport AS port, reportedstate::text AS reported,
              goalstate::text AS goal
       FROM pgautofailover.node ORDER BY nodename`,
    );

  const waitForStates: Formation["waitForStates"] = async (what, timeoutMs, test) => {
    const deadline = Date.now() + timeoutMs;
    let last: NodeState[] = [];
    let lastError: unknown;
    while (Date.now() < deadline) {
      try {
        last = await states();
        if (test(last)) return last;
      } catch (err) {
        lastError = err; // the monitor restarting, or not up yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(
      `formation: ${what} not reached in ${timeoutMs} ms; states ${JSON.stringify(last)}` +
        `${lastError ? `; last error ${String(lastError)}` : ""}\n${formationLogs(40)}`,
    );
  };

  const formationLogs = (lines = 30) =>
    logFiles
      .map((f) => {
        let text = "";
        try {
          text = readFileSync(f, "utf8");
        } catch {}
        return `--- ${f}\n${text.split("\n").slice(-lines).join("\n")}`;
      })
      .join("\n");

  const settled = (s: NodeState) => s.reported === s.goal;
  const nodeOf = (name: string) => nodes.find((n) => n.name === name) as FormationNode;
  const healthy = (all: NodeState[]) =>
    all.length === nodes.length &&
    all.every(settled) &&
    all.filter((s) => s.reported === "primary").length === 1 &&
    all.filter((s) => s.reported === "secondary").length === nodes.length - 1;

  try {
    const t0 = Date.now();
    await Promise.all([initdb(monitorData), initdb(nodes[0]?.pgdata as string)]);
    await tool("pg_autoctl", [
      "create",
      "monitor",
      "--pgdata",
      monitorData,
      "--pgport",
      String(monitorPort),
      "--hostname",
      "127.0.0.1",
      "--auth",
      "trust",
      "--no-ssl",
    ]);
    // `create monitor` has no --listen; its default is every address (pg_hba still admits
    // only loopback). From `run` on it listens on 127.0.0.1 alone.
    await tool("pg_autoctl", [
      "config",
      "set",
      "--pgdata",
      monitorData,
      "postgresql.listen_addresses",
      "127.0.0.1",
    ]);
    spawnKeeper("monitor", monitorData);
    for (;;) {
      try {
        await monitorSql("SELECT 1");
        break;
      } catch (err) {
        if (Date.now() - t0 > 60_000) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    for (const [name, value] of Object.entries(MONITOR_SETTINGS)) {
      await monitorSql(`ALTER SYSTEM SET ${name} = ${value}`);
    }
    await monitorSql("SELECT pg_reload_conf()");
    log(`monitor up on ${monitorPort} (${Date.now() - t0} ms)`);

    const createNode = async (node: FormationNode) => {
      await tool("pg_autoctl", [
        "create",
        "postgres",
        "--pgdata",
        node.pgdata,
        "--pgport",
        String(node.port),
        "--listen",
        "127.0.0.1",
        "--hostname",
        "127.0.0.1",
        "--name",
        node.name,
        "--monitor",
        monitorUrl,
        "--auth",
        "trust",
        "--no-ssl",
      ]);
      await tool("pg_autoctl", [
        "config",
        "set",
        "--pgdata",
        node.pgdata,
        "timeout.network_partition_timeout",
        String(KEEPER_NETWORK_PARTITION_TIMEOUT_S),
      ]);
      spawnKeeper(node.name, node.pgdata);
    };
    const [first, ...others] = nodes as [FormationNode, ...FormationNode[]];
    await createNode(first);
    await waitForStates(`${first.name} single`, 60_000, (all) =>
      all.some((s) => s.name === first.name && s.reported === "single" && settled(s)),
    );
    await Promise.all(others.map(createNode));
    await waitForStates("one primary, the others secondaries", 120_000, healthy);
    // Three data nodes: every commit waits for one of the two standbys (ANY 1), even while
    // the other is away. (With two, it must be 0: the primary alone goes on writing.)
    // (pg_autoctl 2.0's `set formation number-sync-standbys` refuses every value: the
    // monitor's function does the same.)
    await monitorSql(
      `SELECT pgautofailover.set_formation_number_sync_standbys('default', ${nodes.length >= 3 ? 1 : 0})`,
    );
    await waitForStates("settled after number-sync-standbys", 60_000, healthy);
    log(`formation of ${nodes.length} data nodes up (${Date.now() - t0} ms)`);
  } catch (err) {
    emergencyStop();
    process.off("exit", emergencyStop);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    throw err;
  }

  const formation: Formation = {
    dir,
    monitorPort,
    nodes,
    databaseUrl:
      `postgres://postgres@${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}/postgres` +
      "?target_session_attrs=read-write",
    states,
    waitForStates,
    async waitHealthy(timeoutMs) {
      const all = await waitForStates("one primary, the others secondaries", timeoutMs, healthy);
      return nodeOf((all.find((s) => s.reported === "primary") as NodeState).name);
    },
    async primary() {
      const all = await states();
      const p = all.find((s) => s.reported === "primary" && settled(s));
      return p ? nodeOf(p.name) : undefined;
    },
    async killNode(node) {
      const keeper = keepers.get(node.name);
      if (keeper?.pid !== undefined) {
        try {
          process.kill(-keeper.pid, "SIGKILL");
        } catch {}
      }
      // Anything of that node outside the group (its cwd is the node's PGDATA).
      for (const pid of processesInDir()) {
        try {
          if (readlinkSync(`/proc/${pid}/cwd`).startsWith(node.pgdata))
            process.kill(pid, "SIGKILL");
        } catch {}
      }
      keepers.delete(node.name);
      log(`kill -9 ${node.name} (keeper and PostgreSQL)`);
    },
    startNode(node) {
      spawnKeeper(node.name, node.pgdata);
      log(`${node.name} started again`);
    },
    async switchover() {
      await tool("pg_autoctl", ["perform", "switchover", "--pgdata", monitorData], 120_000);
      log("switchover done");
    },
    logs: formationLogs,
    async stop() {
      if (stopped) return;
      stopped = true;
      emergencyStop();
      process.off("exit", emergencyStop);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
  return formation;
}
