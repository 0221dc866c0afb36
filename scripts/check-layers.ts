/**
 * One-way layers for server/: a file may import only from its own room or a room below it.
 * Run by `npm run lint` and CI; exits 1 and lists every upward import.
 *
 * Rooms, lowest first (the order follows the code: each room uses only those before it):
 *   domain     limits, names, message kinds, enum words (plus errors, logger, tokens, and
 *              metrics/: the Prometheus instruments, cross-cutting like the logger)
 *   store      SQL and transactions, and the batchers that group their round trips
 *   inbox      in-process fan-out and wake-ups (hub, cluster bus, request waiters), caller
 *   protocols  per-protocol send plans, lifecycle, expiry
 *   interceptors  auth, journal, rules, error mapping
 *   http       server/http/: the wire plumbing (response fixes, body limits, keepalive), below
 *              the handlers, which read its context keys
 *   handlers   one file per group of RPCs
 *   streaming  gRPC on the bare HTTP/2 stream: the call pipeline, Subscribe's own loop
 *   services   health, reflection, background jobs (retention), the /mcp endpoint
 *   app        app.ts and its configuration
 *   main       the process entry point
 *
 * And the web console (console/src/, bundled for a browser): it may import its own files,
 * gen/, and the modules of client/ that need no Node API (CONSOLE_MAY_IMPORT) — never
 * server/, nor the rest of client/ (connect-node, the CLI).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const rooms = [
  "domain",
  "store",
  "inbox",
  "protocols",
  "interceptors",
  "http",
  "handlers",
  "streaming",
  "services",
  "app",
  "main",
] as const;
type Room = (typeof rooms)[number];

/** Files at server/'s root, by the room they belong to. */
const rootFiles: Record<string, Room> = {
  "errors.ts": "domain",
  "logger.ts": "domain",
  "tokens.ts": "domain",
  "periodic.ts": "domain",
  "caller.ts": "inbox",
  "config.ts": "app",
  "database-from-config.ts": "app",
  "port-check.ts": "app",
  "app.ts": "app",
  "main.ts": "main",
};

/** Folders under server/ that are not a room of their own name. */
const folderRooms: Record<string, Room> = {
  metrics: "domain",
  health: "services",
  jobs: "services",
  mcp: "services",
  reflection: "services",
};

const serverDir = resolve(process.argv[2] ?? join(import.meta.dirname, "..", "server"));

function roomOf(file: string): Room | undefined {
  const parts = relative(serverDir, file).split("/");
  if (parts[0] === undefined || parts[0].startsWith("..")) return undefined; // outside server/
  if (parts.length === 1) return rootFiles[parts[0]];
  const folder = parts[0];
  return folderRooms[folder] ?? ((rooms as readonly string[]).find((r) => r === folder) as Room);
}

function* tsFiles(dir: string, endings = [".ts"]): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* tsFiles(path, endings);
    else if (endings.some((e) => entry.name.endsWith(e))) yield path;
  }
}

// Static imports and re-exports, type-only ones included (they still couple the rooms).
const importPattern = /(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/g;

const problems: string[] = [];
for (const file of tsFiles(serverDir)) {
  const from = roomOf(file);
  if (from === undefined) {
    problems.push(`${relative(serverDir, file)}: in no room (add it to scripts/check-layers.ts)`);
    continue;
  }
  for (const match of readFileSync(file, "utf8").matchAll(importPattern)) {
    const target = resolve(dirname(file), (match[1] as string).replace(/\.js$/, ".ts"));
    const to = roomOf(target);
    if (to === undefined) continue; // gen/ and other folders outside server/
    const intoServer = relative(serverDir, target).split("/")[0];
    if (relative(serverDir, file).startsWith("domain/") && intoServer !== "domain") {
      problems.push(
        `${relative(serverDir, file)} imports ${relative(serverDir, target)}: ` +
          "server/domain/ is pure and imports nothing else of server/",
      );
    } else if (rooms.indexOf(to) > rooms.indexOf(from)) {
      problems.push(
        `${relative(serverDir, file)} (${from}) imports ${relative(serverDir, target)} (${to}): ` +
          "a room may import only from itself or the rooms below it",
      );
    }
  }
}

/** The client modules the console shares: enum words, descriptions, errors, backoff. */
const CONSOLE_MAY_IMPORT = ["names.ts", "describe.ts", "team-error.ts", "backoff.ts"];
const repoDir = resolve(serverDir, "..");
const consoleDir = join(repoDir, "console", "src");
const consoleImports = /(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/g;
for (const file of process.argv[2] ? [] : tsFiles(consoleDir, [".ts", ".tsx"])) {
  for (const match of readFileSync(file, "utf8").matchAll(consoleImports)) {
    const target = resolve(dirname(file), (match[1] as string).replace(/\.js$/, ".ts"));
    const where = relative(repoDir, target);
    const ok =
      !relative(consoleDir, target).startsWith("..") ||
      where.startsWith("gen/") ||
      CONSOLE_MAY_IMPORT.some((name) => where === `client/${name}`);
    if (!ok) {
      problems.push(
        `${relative(repoDir, file)} imports ${where}: the console may import console/src, ` +
          `gen/ and client/{${CONSOLE_MAY_IMPORT.join(",")}} only`,
      );
    }
  }
}

if (problems.length > 0) {
  console.error(`imports that break the layers:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`layers: ok (${rooms.join(" < ")}); console: gen/ and client's browser modules only`);
