import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkLayers, HOUSE } from "../../scripts/check-layers.js";
import { checkPackages, type PackageHouse } from "../../scripts/layers/package-layers.js";

const repoRoot = join(import.meta.dirname, "..", "..");

/** A repository of npm workspaces in a temporary folder: path → file content. */
function fixture(files: Record<string, string | object>): string {
  const root = mkdtempSync(join(tmpdir(), "tp-layers-"));
  roots.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(
      join(root, path),
      typeof content === "string" ? content : JSON.stringify(content),
    );
  }
  return root;
}
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const pkg = (name: string, dependencies: Record<string, string> = {}, more: object = {}) => ({
  name,
  dependencies,
  ...more,
});

/** lib < app; web runs in a browser and may take lib/safe.js only. */
const house: PackageHouse = {
  direction: ["@x/lib", "@x/web", "@x/app"],
  browser: { "@x/web": { "@x/lib": ["./safe.js"] } },
};

const sound = {
  "package.json": { workspaces: ["lib", "lib/tool", "web", "app"] },
  "lib/package.json": pkg("@x/lib", {}, { exports: { "./*.js": "./*.ts", "./tool/*": null } }),
  "lib/safe.ts": "export const safe = 1;\n",
  "lib/node-only.ts": 'import { readFileSync } from "node:fs";\nexport const r = readFileSync;\n',
  "lib/tool/package.json": pkg("@x/tool"),
  "lib/tool/main.ts": "export const tool = 1;\n",
  "web/package.json": pkg("@x/web", { "@x/lib": "1.0.0", preact: "11" }),
  "web/main.ts": 'import { safe } from "@x/lib/safe.js";\nimport { h } from "preact";\n',
  "app/package.json": pkg("@x/app", { "@x/lib": "1.0.0", pg: "8" }),
  "app/main.ts":
    'import pg from "pg";\nimport { r } from "@x/lib/node-only.js";\nimport { local } from "./local.js";\n',
  "app/local.ts": "export const local = 1;\n",
};
const withTool = { ...house, direction: ["@x/lib", "@x/tool", "@x/web", "@x/app"] };

describe("the package layers (scripts/check-layers.ts)", () => {
  it("finds nothing against the house in this repository", () => {
    expect(checkLayers(repoRoot)).toEqual([]);
    expect(HOUSE.direction).toContain("@team-protocols/server");
  });

  it("accepts a house whose imports all follow its package.json files", () => {
    expect(checkPackages(fixture(sound), withTool)).toEqual([]);
  });

  it("refuses a relative import that leaves the package, or enters a package nested in it", () => {
    const root = fixture({
      ...sound,
      "lib/safe.ts": 'import { local } from "../app/local.js";\nimport "./tool/main.js";\n',
    });
    expect(checkPackages(root, withTool)).toEqual([
      expect.stringMatching(
        /^lib\/safe\.ts imports "\.\.\/app\/local\.js": it leaves @x\/lib's folder/,
      ),
      expect.stringMatching(
        /^lib\/safe\.ts imports "\.\/tool\/main\.js": lib\/tool is a package of its own/,
      ),
    ]);
  });

  it("refuses a package it does not declare, and a subpath the package hides", () => {
    const root = fixture({
      ...sound,
      "app/main.ts": 'import "redis";\nimport("@x/web/main.js");\nimport "@x/lib/tool/main.js";\n',
      "app/package.json": pkg("@x/app", { "@x/lib": "1.0.0" }),
    });
    expect(checkPackages(root, withTool)).toEqual([
      'app/main.ts imports "redis": redis is not among @x/app\'s dependencies',
      'app/main.ts imports "@x/web/main.js": @x/web is not among @x/app\'s dependencies',
      'app/main.ts imports "@x/lib/tool/main.js": @x/lib does not export ./tool/main.js (exports "./tool/*": null)',
    ]);
  });

  it("refuses a dependency against the direction, even a declared one (no cycle can form)", () => {
    const root = fixture({
      ...sound,
      "lib/package.json": pkg("@x/lib", { "@x/app": "1.0.0" }),
      "lib/safe.ts": 'import "@x/app/local.js";\n',
    });
    expect(checkPackages(root, withTool)).toContain(
      "@x/lib depends on @x/app, against the direction (@x/lib < @x/tool < @x/web < @x/app)",
    );
  });

  it("keeps a browser package to the modules listed for it, and off Node's built-ins", () => {
    const root = fixture({
      ...sound,
      "web/main.ts": 'import "@x/lib/node-only.js";\nimport "node:fs";\nimport "preact";\n',
    });
    expect(checkPackages(root, withTool)).toEqual([
      'web/main.ts imports "@x/lib/node-only.js": @x/web runs in a browser and may import from @x/lib only ./safe.js',
      'web/main.ts imports "node:fs": @x/web runs in a browser: no Node built-ins',
    ]);
  });

  it("names a workspace package that has no place in the direction", () => {
    expect(checkPackages(fixture(sound), house)).toEqual([
      "@x/tool (lib/tool) is in no place of the direction; add it",
    ]);
  });
});
