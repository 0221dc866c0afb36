/**
 * Builds the server into one JavaScript file, dist/server/main.js (or under the folder given):
 * what `npm start` runs. The workspace packages it uses (@team-protocols/contract, client, mcp)
 * are bundled in, since in the repository they are TypeScript; every other package stays an
 * import from node_modules. The files the server finds beside its code (migrations, the
 * embedded database's initdb script) are copied next to the bundle, so its import.meta.url
 * paths hold; the console's files are found through the console package.
 *
 * Why not run the TypeScript through tsx's loader, as the tests and the CLI do: tsx compiles
 * with esbuild's keepNames, which re-defines the `name` of every named function the code
 * creates, and V8 then keeps that function's properties in a dictionary, which is larger.
 * An idle Subscribe stream holds several such closures for hours, so compiled it holds less
 * heap (`npm run bench:heap` shows the dictionaries by owner).
 *
 * It is quick, so `npm start` builds every time and never runs stale code.
 *
 *   tsx scripts/build-server.ts            into dist/
 *   tsx scripts/build-server.ts <dir>      into <dir> (inside the project, so node_modules is found)
 */
import { cpSync, rmSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { build, type Plugin } from "esbuild";

const root = join(import.meta.dirname, "..");

/** Copied as they are, from the project root to the bundle's folder. */
const ASSETS = {
  "server/store/migrations": "migrations",
  "server/store/embedded-initdb.mjs": "embedded-initdb.mjs",
};

/** Bare imports stay imports, but for our own workspace packages (TypeScript in the repo). */
const externalPackages: Plugin = {
  name: "external-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith("@team-protocols/") ? undefined : { path: args.path, external: true },
    );
  },
};

/** Builds into `outDir` (emptied first); resolves once every file is written. */
export async function buildServer(outDir: string): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  const serverOut = join(outDir, "server");
  await build({
    entryPoints: [join(root, "server", "main.ts")],
    outfile: join(serverOut, "main.js"),
    absWorkingDir: root,
    bundle: true,
    plugins: [externalPackages],
    format: "esm",
    platform: "node",
    target: "node20",
    // Read by `node --enable-source-maps`, only when a stack trace is printed.
    sourcemap: "linked",
    logLevel: "warning",
  });
  for (const [from, to] of Object.entries(ASSETS)) {
    cpSync(join(root, from), join(serverOut, to), { recursive: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const outDir = resolve(process.argv[2] ?? join(root, "dist"));
  const started = performance.now();
  await buildServer(outDir);
  const ms = Math.round(performance.now() - started);
  console.error(`built the server into ${relative(process.cwd(), outDir) || "."} in ${ms} ms`);
}
