import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const resultsDir = fileURLToPath(new URL("../../bench/results/", import.meta.url));

/**
 * Sets `key` in bench/results/<file>.json, created if missing, keeping the other keys: the
 * figures a slow test measured on its way (bench/results is git-ignored; docs/performance.md
 * says which test writes which file).
 */
export async function mergeResult(file: string, key: string, value: object): Promise<void> {
  await mkdir(resultsDir, { recursive: true });
  const path = join(resultsDir, `${file}.json`);
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
  } catch {}
  current[key] = value;
  await writeFile(path, `${JSON.stringify(current, null, 2)}\n`);
}
