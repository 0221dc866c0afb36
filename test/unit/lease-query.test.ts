import { describe, expect, it } from "vitest";
import { leaseQueryFor } from "../../client/cli/hooks/lease-guard.js";
import { parseLeaseResource, resourcesOverlap } from "../../server/domain/lease-patterns.js";

/**
 * What the lease hooks ask the server about a file (ListLeases' resource): any repository
 * path becomes a resource the server takes, still covered by every lease that covers the
 * file. A path the server refused failed the whole check open, so a file named `a:b.md`
 * staged beside a leased one let the commit through.
 */
const LONG = `deep/${"x".repeat(600)}/${"y".repeat(600)}.ts`;
const CASES: [path: string, covering: string[], notCovering: string[]][] = [
  ["src/parser/a:b.ts", ["src/parser/**", "src/*/a?b.ts", "**"], ["src/lexer/**", "task:parser"]],
  ["notes:2024.md", ["*.md", "**", "notes?2024.md"], ["notes:2024.md", "docs/**"]],
  ["task:parser", ["**", "task?parser"], ["task:parser"]],
  ["src/win\\path.ts", ["src/*.ts", "src/**"], ["lib/**"]],
  ["src/a*b.ts", ["src/a?b.ts", "src/**"], ["src/ab.ts"]],
  ["src/**/x.ts", ["src/**"], ["lib/**"]],
  ["src/tab\there.ts", ["src/*.ts"], ["src/*.js"]],
  [LONG, ["deep/**", `deep/${"x".repeat(600)}/*.ts`], ["shallow/**"]],
  ["src/plain.ts", ["src/plain.ts"], ["src/other.ts"]],
];

describe("the resource a hook asks about a repository path", () => {
  for (const [path, covering, notCovering] of CASES) {
    it(`${JSON.stringify(path.slice(0, 30))}: taken, and met by the leases that cover it`, () => {
      const query = leaseQueryFor(path);
      const asked = parseLeaseResource(query);
      expect(asked.kind).toBe("path");
      for (const lease of covering) {
        expect(resourcesOverlap(asked, parseLeaseResource(lease)), lease).toBe(true);
      }
      for (const lease of notCovering) {
        expect(resourcesOverlap(asked, parseLeaseResource(lease)), lease).toBe(false);
      }
    });
  }

  it("leaves a path the server takes as it is", () => {
    expect(leaseQueryFor("src/parser/lexer.ts")).toBe("src/parser/lexer.ts");
  });
});
