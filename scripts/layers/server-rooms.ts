import { dirname, relative, resolve } from "node:path";
import { importsOf, sourceFiles } from "./source-files.js";

/**
 * One-way layers inside server/: a file may import only from its own room or a room below it.
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
 *   grpc       gRPC on the bare HTTP/2 stream: every gRPC call (unary and server streams)
 *              through the one call pipeline
 *   services   health, reflection, background jobs (retention), the /mcp endpoint
 *   app        app.ts and its configuration
 *   main       the process entry point
 */
export const rooms = [
  "domain",
  "store",
  "inbox",
  "protocols",
  "interceptors",
  "http",
  "handlers",
  "grpc",
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
  // The export signing key, loaded from configuration at start.
  export: "app",
  health: "services",
  jobs: "services",
  mcp: "services",
  reflection: "services",
};

export function checkServerRooms(serverDir: string): string[] {
  const roomOf = (file: string): Room | undefined => {
    const parts = relative(serverDir, file).split("/");
    if (parts[0] === undefined || parts[0].startsWith("..")) return undefined; // outside server/
    if (parts.length === 1) return rootFiles[parts[0]];
    const folder = parts[0];
    return folderRooms[folder] ?? ((rooms as readonly string[]).find((r) => r === folder) as Room);
  };
  const problems: string[] = [];
  for (const file of sourceFiles(serverDir)) {
    const from = roomOf(file);
    if (from === undefined) {
      problems.push(
        `server/${relative(serverDir, file)}: in no room (add it to scripts/layers/server-rooms.ts)`,
      );
      continue;
    }
    for (const specifier of importsOf(file)) {
      if (!specifier.startsWith(".")) continue; // other packages: the package-level check
      const target = resolve(dirname(file), specifier.replace(/\.js$/, ".ts"));
      const to = roomOf(target);
      if (to === undefined) continue; // outside server/: the package-level check refuses it
      const show = (f: string) => `server/${relative(serverDir, f)}`;
      if (from === "domain" && to !== "domain") {
        problems.push(
          `${show(file)} imports ${show(target)}: server/domain/ is pure and imports nothing else of server/`,
        );
      } else if (rooms.indexOf(to) > rooms.indexOf(from)) {
        problems.push(
          `${show(file)} (${from}) imports ${show(target)} (${to}): ` +
            "a room may import only from itself or the rooms below it",
        );
      }
    }
  }
  return problems;
}
