import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** One npm workspace package, as its package.json declares it. */
export interface WorkspacePackage {
  name: string;
  /** Absolute path of its folder. */
  dir: string;
  /** Every package it declares it uses (dependencies, peer and optional ones). */
  dependsOn: Set<string>;
  /** Its `exports` keys whose target is null: subpaths it refuses to export. */
  hidden: string[];
}

interface PackageJson {
  name?: string;
  workspaces?: string[];
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const readPackageJson = (dir: string) =>
  JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;

/** The root's workspace packages (plain folder paths; no globs are used here). */
export function workspacePackages(root: string): WorkspacePackage[] {
  const folders = readPackageJson(root).workspaces ?? [];
  return folders.map((folder) => {
    const dir = resolve(root, folder);
    if (!existsSync(join(dir, "package.json"))) {
      throw new Error(`workspace ${folder} has no package.json`);
    }
    const pkg = readPackageJson(dir);
    if (!pkg.name) throw new Error(`${folder}/package.json has no name`);
    return {
      name: pkg.name,
      dir,
      dependsOn: new Set([
        ...Object.keys(pkg.dependencies ?? {}),
        ...Object.keys(pkg.peerDependencies ?? {}),
        ...Object.keys(pkg.optionalDependencies ?? {}),
      ]),
      hidden: Object.entries(pkg.exports ?? {})
        .filter(([, target]) => target === null)
        .map(([key]) => key),
    };
  });
}

/** The package a bare specifier names: "@scope/name/sub" is "@scope/name", "pg/lib" is "pg". */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
}
