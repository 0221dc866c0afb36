import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/child-server.js";

/**
 * The limits an operator can set: docs/operations.md's Limits table names each one's knob,
 * and the README's row for docs/operations.md promises to list every knob. A limit added to
 * the table and not to the README (as IMPORT_MAX_BYTES was) fails here.
 */
const read = (path: string) => readFileSync(join(repoRoot, path), "utf8");

/** The knobs (`UPPER_CASE` names) in the last column of the table under `## Limits`. */
function limitKnobs(operations: string): string[] {
  const section = operations.split(/^## Limits$/m)[1]?.split(/^## /m)[0] ?? "";
  const rows = section.split("\n").filter((l) => l.startsWith("|") && !l.startsWith("|---"));
  const knobs = rows.slice(1).flatMap((row) => {
    const cells = row.split("|");
    return [...(cells.at(-2) ?? "").matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] ?? "");
  });
  return [...new Set(knobs)].sort();
}

describe("the limits are listed where the README says", () => {
  const operations = read("docs/operations.md");
  const knobs = limitKnobs(operations);

  it("docs/operations.md's Limits table names its knobs", () => {
    expect(knobs).toContain("MAX_CONNECTIONS");
    expect(knobs).toContain("REQUEST_TIMEOUT_MS");
    expect(knobs.length).toBeGreaterThan(20);
  });

  it("the README's row for docs/operations.md lists every knob of that table", () => {
    const row = read("README.md")
      .split("\n")
      .find((l) => l.startsWith("| [docs/operations.md]"));
    expect(row, "the README has a row for docs/operations.md").toBeDefined();
    expect(knobs.filter((k) => !row?.includes(`\`${k}\``))).toEqual([]);
  });

  it("each knob has a row, with its default, in docs/operations.md's configuration table", () => {
    const configured = operations
      .split("\n")
      .filter((l) => /^\| `[A-Z][A-Z0-9_]+` +\| `--/.test(l))
      .map((l) => /^\| `([A-Z0-9_]+)`/.exec(l)?.[1]);
    expect(knobs.filter((k) => !configured.includes(k))).toEqual([]);
  });
});
