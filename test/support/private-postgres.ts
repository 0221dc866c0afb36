import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/**
 * A PostgreSQL server of a test's own (initdb into a temp folder, pg_ctl on a free port), so
 * the test can stop, crash and restart it without disturbing any other test file: the shared
 * server on 5432 is never touched. Runs as the `postgres` OS user when we are root (initdb
 * refuses root). stop() removes everything; a process exit that skipped stop() still stops
 * the server and removes the folder (synchronously, from an 'exit' handler).
 */

const run = promisify(execFile);

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust auth, superuser). */
  readonly url: string;
  readonly port: number;
  /** The temp folder: data/, log, and the unix socket. */
  readonly dir: string;
  /** A URL for another database on this server. */
  urlFor(database: string): string;
  /**
   * Stops the server (`fast`: clean shutdown, connections terminated; `immediate`: a crash,
   * recovery from the WAL at the next start), waits `downMs`, starts it again on the same port.
   */
  restart(mode: "fast" | "immediate", downMs?: number): Promise<void>;
  /** The server's log so far. */
  log(): string;
  /** Stops the server and deletes the folder. Idempotent. */
  stop(): Promise<void>;
}

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

/** The newest installed PostgreSQL bin folder (Debian layout), or undefined. */
export function findPostgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = join(root, v, "bin");
    if (existsSync(join(bin, "initdb")) && existsSync(join(bin, "pg_ctl"))) return bin;
  }
  return undefined;
}

/** Why a private PostgreSQL cannot be started here, or undefined when it can. */
export function privatePostgresUnavailable(): string | undefined {
  if (!findPostgresBin()) return "no PostgreSQL binaries under /usr/lib/postgresql/*/bin";
  if (process.getuid?.() === 0) {
    try {
      execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
    } catch {
      return "running as root and there is no `postgres` OS user to run initdb as";
    }
  }
  return undefined;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("no PostgreSQL binaries under /usr/lib/postgresql/*/bin");
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(os.tmpdir(), "tp-private-pg-"));
  const data = join(dir, "data");
  const logFile = join(dir, "log");
  // As root, the binaries run as `postgres` (initdb and postgres refuse root).
  const command = (tool: string, args: string[]): [string, string[]] =>
    asRoot
      ? ["runuser", ["-u", "postgres", "--", join(bin, tool), ...args]]
      : [join(bin, tool), args];
  const pgCtl = async (args: string[]) => {
    const [file, argv] = command("pg_ctl", ["-D", data, ...args]);
    try {
      await run(file, argv, { timeout: 60_000 });
    } catch (err) {
      throw new Error(`pg_ctl ${args[0]} failed: ${(err as Error).message}\nlog:\n${readLog()}`);
    }
  };
  const readLog = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };

  const emergencyStop = () => {
    if (existsSync(join(data, "postmaster.pid"))) {
      const [file, argv] = command("pg_ctl", ["-D", data, "stop", "-m", "immediate", "-w"]);
      try {
        execFileSync(file, argv, { stdio: "ignore", timeout: 20_000 });
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", emergencyStop);

  try {
    if (asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), 0);
    const [file, argv] = command("initdb", [
      "-D",
      data,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync", // the data folder is thrown away; the server's own fsyncs stay on
    ]);
    await run(file, argv, { timeout: 60_000 });
    let port = 0;
    const start = () =>
      pgCtl([
        "-o",
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
        "-l",
        logFile,
        "start",
        "-w",
        "-t",
        "30",
      ]);
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await start();
        break;
      } catch (err) {
        // The port was free when picked but may have been taken since: try another.
        if (attempt >= 3 || !/could not bind|already in use/i.test(readLog())) throw err;
      }
    }
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    let stopped = false;
    return {
      url,
      port,
      dir,
      urlFor: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
      async restart(mode, downMs = 0) {
        await pgCtl(["stop", "-m", mode, "-w", "-t", "30"]);
        if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
        await start(); // the same port and socket folder
      },
      log: readLog,
      async stop() {
        if (stopped) return;
        stopped = true;
        try {
          if (existsSync(join(data, "postmaster.pid"))) {
            await pgCtl(["stop", "-m", "fast", "-w", "-t", "30"]);
          }
        } finally {
          emergencyStop();
          process.off("exit", emergencyStop);
        }
      },
    };
  } catch (err) {
    emergencyStop();
    process.off("exit", emergencyStop);
    throw err;
  }
}
