/**
 * Compiles the server to plain JavaScript in dist/ (or the folder given): what `npm start`
 * runs. Every .ts file of server/, client/ and gen/ becomes a .js file at the same place
 * under the folder, one for one (no bundle, no renaming), with a source map for stack traces;
 * the files the server finds beside its code (migrations, the embedded database's initdb
 * script, the console's bundle) are copied to their places, so its import.meta.url paths hold.
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
import { cpSync, readdirSync, rmSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { build } from "esbuild";

const root = join(import.meta.dirname, "..");

/** The folders compiled, and what is copied as it is (relative to the project root). */
const SOURCE_DIRS = ["server", "client", "gen"];
const ASSETS = ["server/store/migrations", "server/store/embedded-initdb.mjs", "console/dist"];

/** Compiles into `outDir` (emptied first); resolves once every file is written. */
export async function buildServer(outDir: string): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  await build({
    entryPoints: SOURCE_DIRS.flatMap((dir) => typeScriptFiles(join(root, dir))),
    outdir: outDir,
    outbase: root,
    absWorkingDir: root,
    bundle: false,
    format: "esm",
    platform: "node",
    target: "node20",
    // Read by `node --enable-source-maps`, only when a stack trace is printed.
    sourcemap: "linked",
    logLevel: "warning",
  });
  for (const asset of ASSETS) {
    cpSync(join(root, asset), join(outDir, asset), { recursive: true });
  }
}

function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((f) => f.isFile() && f.name.endsWith(".ts") && !f.name.endsWith(".d.ts"))
    .map((f) => join(f.parentPath, f.name));
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const outDir = resolve(process.argv[2] ?? join(root, "dist"));
  const started = performance.now();
  await buildServer(outDir);
  const ms = Math.round(performance.now() - started);
  console.error(`built the server into ${relative(process.cwd(), outDir) || "."} in ${ms} ms`);
}
