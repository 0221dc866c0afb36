import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The TypeScript files under `dir`, but those of node_modules, dist and the `skip` folders. */
export function* sourceFiles(dir: string, skip: readonly string[] = []): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === "node_modules" || entry.name === "dist" || skip.includes(path)) continue;
      yield* sourceFiles(path, skip);
    } else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) {
      yield path;
    }
  }
}

// Static imports and re-exports (type-only ones included: they still couple the code) and
// imports for their side effects, each starting a line; and dynamic imports of a literal. A
// line start, or a call's parenthesis, keeps the words "import" and "from" in a string out.
const importPattern =
  /^\s*(?:(?:import|export)\s[^;"]*?from\s*|import\s*)"([^"]+)"|(?<![\w."'])import\s*\(\s*"([^"]+)"/gm;

/** Every module specifier a file imports. */
export function importsOf(file: string): string[] {
  return [...readFileSync(file, "utf8").matchAll(importPattern)].map(
    (m) => (m[1] ?? m[2]) as string,
  );
}
