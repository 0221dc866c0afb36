/**
 * The house drawn from the code's imports, checked: `npm run check-layers` (part of
 * `npm run lint` and CI) exits 1 and lists every import against it.
 *
 * - Between packages (scripts/layers/package-layers.ts): the npm workspaces, lowest first
 *   in DIRECTION; each imports only what its package.json declares, never a package above it,
 *   never another package's files by relative path. The console runs in a browser: it takes
 *   from the client only the modules that need no Node API (CONSOLE_MAY_IMPORT).
 * - Inside server/ (scripts/layers/server-rooms.ts): one-way rooms, domain up to main.
 */
import { join, resolve } from "node:path";
import { checkPackages, type PackageHouse } from "./layers/package-layers.js";
import { checkServerRooms, rooms } from "./layers/server-rooms.js";

/** The packages, lowest first: each may depend only on those before it. */
export const DIRECTION = [
  "@team-protocols/contract", // gen/: the generated code and its enums' words
  "@team-protocols/client", // client/: TeamClient, streams, message builders, prompt text
  "@team-protocols/console", // console/: the web console, bundled for a browser
  "@team-protocols/mcp", // client/mcp/: the MCP bridge (the server hosts it at /mcp)
  "@team-protocols/server", // server/: the service
  "@team-protocols/cli", // client/cli/: `team`, which also serves and bridges
];

/** The client modules the console shares: enum words, descriptions (the feed's too), message builders, errors, backoff, resumable streams. */
export const CONSOLE_MAY_IMPORT = [
  "./names.js",
  "./describe.js",
  "./describe-event.js",
  "./messages.js",
  "./team-error.js",
  "./backoff.js",
  "./resumable-stream.js",
  "./stream-retry.js",
];

export const HOUSE: PackageHouse = {
  direction: DIRECTION,
  browser: {
    "@team-protocols/console": {
      "@team-protocols/contract": "*",
      "@team-protocols/client": CONSOLE_MAY_IMPORT,
    },
  },
};

/** Every import against the house, in the repository at `root`. */
export function checkLayers(root: string, house: PackageHouse = HOUSE): string[] {
  return [...checkPackages(root, house), ...checkServerRooms(join(root, "server"))];
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const problems = checkLayers(join(import.meta.dirname, ".."));
  if (problems.length > 0) {
    console.error(`imports that break the layers:\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(
    `layers: ok (packages ${DIRECTION.map((n) => n.replace("@team-protocols/", "")).join(" < ")}; ` +
      `server ${rooms.join(" < ")}; the console takes the client's browser modules only)`,
  );
}
