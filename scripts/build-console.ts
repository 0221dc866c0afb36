/**
 * Builds the web console into console/dist/, the files server/http/console-assets.ts serves
 * (CONSOLE_FILES): console/src/main.tsx bundled and minified by esbuild with preact and the
 * generated code, plus index.html, console.css and favicon.svg copied as they are.
 *
 * The bundle is committed, so `npm install && npm start` needs no build; CI runs this and
 * fails if the committed files differ (.ci/run). The output depends only on the sources and
 * the pinned esbuild: no timestamps, no absolute paths, no source map.
 *
 *   npm run build:console          build
 *   npm run build:console -- --size   also print each file's size, raw and gzipped
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { CONSOLE_FILES } from "../server/http/console-assets.js";

const root = join(import.meta.dirname, "..");
const src = join(root, "console", "src");
const dist = join(root, "console", "dist");

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

await build({
  entryPoints: [join(src, "main.tsx")],
  outfile: join(dist, "console.js"),
  absWorkingDir: root,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  minify: true,
  jsx: "automatic",
  jsxImportSource: "preact",
  tsconfig: join(root, "console", "tsconfig.json"),
  // The licences of what is bundled (preact, protobuf-es, connect-es) stay in one comment
  // block at the end of the file.
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
});
for (const file of ["index.html", "console.css", "favicon.svg"]) {
  copyFileSync(join(src, file), join(dist, file));
}

// What was built is exactly what the server serves: a file added to one list only is an error.
const built = readdirSync(dist).sort();
const served = CONSOLE_FILES.map((f) => f.file).sort();
if (built.join() !== served.join()) {
  console.error(`console/dist has ${built.join(", ")}; the server serves ${served.join(", ")}`);
  process.exit(1);
}

if (process.argv.includes("--size")) {
  for (const file of built) {
    const body = readFileSync(join(dist, file));
    const gz = gzipSync(body, { level: 9 }).length;
    console.log(
      `${file.padEnd(12)} ${String(body.length).padStart(8)} B  ${String(gz).padStart(7)} B gzip`,
    );
  }
}
console.log(`console: built ${built.length} files into console/dist`);
