import { dirname, relative, resolve, sep } from "node:path";
import { importsOf, sourceFiles } from "./source-files.js";
import { packageNameOf, type WorkspacePackage, workspacePackages } from "./workspace.js";

/**
 * The package-level house: each workspace package may import only
 * - its own files (a relative import never leaves its folder, nor enters a package nested in it),
 * - Node's built-in modules (but a browser package),
 * - the packages its package.json declares, where a workspace package must come before it in
 *   `direction` (so no arrow points against the direction, and there is no cycle),
 * - and no subpath a package hides (an `exports` key whose target is null).
 */
export interface PackageHouse {
  /** Workspace package names, lowest first: a package may depend only on those before it. */
  direction: readonly string[];
  /**
   * Packages that run in a browser: no node: imports, and from a workspace package only the
   * subpaths listed for it ("*": any; a workspace package not listed: none).
   */
  browser?: Record<string, BrowserImports>;
}

type BrowserImports = Record<string, readonly string[] | "*">;

export function checkPackages(root: string, house: PackageHouse): string[] {
  const problems: string[] = [];
  const packages = workspacePackages(root);
  const byName = new Map(packages.map((p) => [p.name, p]));
  const rank = (name: string) => house.direction.indexOf(name);
  const show = (path: string) => relative(root, path).split(sep).join("/");

  for (const p of packages) {
    if (rank(p.name) < 0) {
      problems.push(`${p.name} (${show(p.dir)}) is in no place of the direction; add it`);
      continue;
    }
    for (const dep of p.dependsOn) {
      if (byName.has(dep) && !(rank(dep) < rank(p.name))) {
        problems.push(
          `${p.name} depends on ${dep}, against the direction (${house.direction.join(" < ")})`,
        );
      }
    }
  }

  for (const p of packages) {
    const nested = packages
      .filter((q) => q !== p && q.dir.startsWith(p.dir + sep))
      .map((q) => q.dir);
    const browser = house.browser?.[p.name];
    for (const file of sourceFiles(p.dir, nested)) {
      for (const specifier of importsOf(file)) {
        const problem = specifier.startsWith(".")
          ? relativeProblem(p, nested, resolve(dirname(file), specifier), show)
          : bareProblem(p, specifier, byName, browser);
        if (problem) problems.push(`${show(file)} imports "${specifier}": ${problem}`);
      }
    }
  }
  return problems;
}

function relativeProblem(
  p: WorkspacePackage,
  nested: string[],
  target: string,
  show: (path: string) => string,
): string | undefined {
  if (!target.startsWith(p.dir + sep)) {
    return `it leaves ${p.name}'s folder; import another package by its name, declared in package.json`;
  }
  const inside = nested.find((dir) => target.startsWith(dir + sep));
  if (inside) return `${show(inside)} is a package of its own; import it by its name`;
  return undefined;
}

function bareProblem(
  p: WorkspacePackage,
  specifier: string,
  byName: Map<string, WorkspacePackage>,
  browser: BrowserImports | undefined,
): string | undefined {
  if (specifier.startsWith("node:")) {
    return browser ? `${p.name} runs in a browser: no Node built-ins` : undefined;
  }
  const name = packageNameOf(specifier);
  if (name === p.name) return "a package imports its own files by relative path";
  if (!p.dependsOn.has(name)) return `${name} is not among ${p.name}'s dependencies`;
  const target = byName.get(name);
  if (!target) return undefined;
  const subpath = `.${specifier.slice(name.length)}` || ".";
  const hidden = target.hidden.find((key) =>
    matchesExportKey(key, subpath === "." ? "." : subpath),
  );
  if (hidden) return `${name} does not export ${subpath} (exports "${hidden}": null)`;
  if (browser) {
    const allowed = browser[name];
    if (allowed !== "*" && !allowed?.includes(subpath)) {
      return `${p.name} runs in a browser and may import from ${name} only ${
        allowed && allowed.length > 0 ? allowed.join(", ") : "nothing"
      }`;
    }
  }
  return undefined;
}

/** Node's export key matching: "./x" exactly, or one "*" standing for any text. */
function matchesExportKey(key: string, subpath: string): boolean {
  const star = key.indexOf("*");
  if (star < 0) return key === subpath;
  const [before, after] = [key.slice(0, star), key.slice(star + 1)];
  return (
    subpath.length >= before.length + after.length &&
    subpath.startsWith(before) &&
    subpath.endsWith(after)
  );
}
