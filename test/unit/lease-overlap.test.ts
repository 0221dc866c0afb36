import { describe, expect, it } from "vitest";
import {
  type LeaseMode,
  leasesConflict,
  parseLeaseResource,
  resourcesOverlap,
} from "../../server/domain/lease-patterns.js";

/**
 * The overlap rule as a table (docs/protocols.md, "Leases"): each pair is checked both ways
 * round, since a lease taken second must meet the same answer as one taken first.
 */
const OVERLAP: [string, string, boolean, string][] = [
  ["README.md", "README.md", true, "the same file"],
  ["README.md", "readme.md", false, "paths are case-sensitive"],
  ["src/parser/**", "src/parser/lexer.ts", true, "** covers a file below it"],
  ["src/parser/**", "src/parser/deep/er/x.ts", true, "** covers any depth"],
  ["src/parser/**", "src/parser", true, "** matches zero segments: the folder itself"],
  ["src/parser/**", "src/parsers/x.ts", false, "a sibling folder with a longer name"],
  ["src/**", "src/a/*.ts", true, "src/a/x.ts is under both"],
  ["src/*.ts", "src/a/*.ts", false, "* never crosses /"],
  ["src/*.ts", "src/main.ts", true, "* inside one segment"],
  ["src/*.ts", "src/main.js", false, "the extension differs"],
  ["*.md", "README.md", true, "a top-level glob"],
  ["*.md", "docs/guide.md", false, "a top-level glob stays at the top"],
  ["**/*.md", "docs/guide.md", true, "**/ at the start reaches any folder"],
  ["**/*.md", "README.md", true, "**/ matches zero folders too"],
  ["**", "anything/at/all", true, "** covers the whole repository"],
  ["**", "task:parser", false, "a named resource is never a path"],
  ["src/?.ts", "src/a.ts", true, "? is one character"],
  ["src/?.ts", "src/ab.ts", false, "? is exactly one character"],
  ["src/*x*/a", "src/*y*/a", true, "src/xy/a matches both"],
  ["a/*.test.ts", "a/*.spec.ts", false, "no name ends in both .test.ts and .spec.ts"],
  ["a/b*", "a/*c", true, "a/bc"],
  ["docs/", "docs/guide.md", true, "a trailing slash leases the folder's content"],
  ["src/**/gen/*.ts", "src/x/**", true, "src/x/gen/a.ts"],
  ["src/**/gen/*.ts", "lib/**", false, "different top folders"],
  ["task:parser", "task:parser", true, "the same named resource"],
  ["task:parser", "task:lexer", false, "another named resource"],
  ["db:migrations", "task:migrations", false, "another kind"],
  ["db:migrations", "db/migrations", false, "a named resource is not the path it resembles"],
];

describe("lease overlap, both ways round", () => {
  for (const [a, b, overlap, why] of OVERLAP) {
    it(`${a} ${overlap ? "overlaps" : "does not overlap"} ${b}: ${why}`, () => {
      const ra = parseLeaseResource(a);
      const rb = parseLeaseResource(b);
      expect(resourcesOverlap(ra, rb)).toBe(overlap);
      expect(resourcesOverlap(rb, ra)).toBe(overlap);
    });
  }

  // The longest resources there may be, shaped so that every pair of positions is worth
  // exploring: a table over their lengths decides them (a recursion over a Map took seconds
  // per pair, holding the server; bench/README.md, "Leases", has the figures).
  const LONG: [string, string, boolean, string][] = [
    ["a*".repeat(511) + "c", "*a".repeat(512), false, "one name ends in c, the other in a"],
    ["*a".repeat(512), `${"*a".repeat(511)}*`, true, "a name of 512 a's matches both"],
    ["?*".repeat(512), "*?".repeat(512), true, "any 512 characters"],
    [`${"a*/".repeat(341)}c`, `${"*a/".repeat(341)}*`, true, "341 folders ending in a, then c"],
    [`${"a*/".repeat(341)}c`, `${"b*/".repeat(341)}*`, false, "no folder starts with both a and b"],
  ];
  for (const [a, b, overlap, why] of LONG) {
    it(`${a.length} and ${b.length} characters: ${overlap ? "overlap" : "no overlap"} (${why})`, () => {
      expect(resourcesOverlap(parseLeaseResource(a), parseLeaseResource(b))).toBe(overlap);
      expect(resourcesOverlap(parseLeaseResource(b), parseLeaseResource(a))).toBe(overlap);
    });
  }

  it("has at least 20 pairs, both answers among them", () => {
    expect(OVERLAP.length).toBeGreaterThanOrEqual(20);
    expect(new Set(OVERLAP.map((row) => row[2]))).toEqual(new Set([true, false]));
  });
});

describe("lease conflict: overlap and at least one exclusive", () => {
  const modes: [LeaseMode, LeaseMode, boolean][] = [
    ["exclusive", "exclusive", true],
    ["exclusive", "shared", true],
    ["shared", "exclusive", true],
    ["shared", "shared", false],
  ];
  for (const [ma, mb, conflict] of modes) {
    it(`${ma} against ${mb} on overlapping paths: ${conflict ? "conflict" : "both held"}`, () => {
      const a = { resource: parseLeaseResource("src/**"), mode: ma };
      const b = { resource: parseLeaseResource("src/a.ts"), mode: mb };
      expect(leasesConflict(a, b)).toBe(conflict);
      expect(leasesConflict(b, a)).toBe(conflict);
    });
  }
  it("never on resources that do not overlap, whatever the modes", () => {
    const a = { resource: parseLeaseResource("src/**"), mode: "exclusive" as const };
    const b = { resource: parseLeaseResource("docs/**"), mode: "exclusive" as const };
    expect(leasesConflict(a, b)).toBe(false);
  });
});

describe("what a resource may not be", () => {
  const refused: [string, RegExp][] = [
    ["", /empty/],
    ["/etc/passwd", /absolute/],
    ["src/../secrets", /"\.\." segment/],
    ["./src", /"\." segment/],
    ["src//a", /"\/\/" segment/],
    ["src\\a.ts", /uses \\/],
    ["C:/src", /colon but is not kind:name/],
    ["src/a**b", /\*\* stands alone/],
    ["a\nb", /control character/],
    ["x".repeat(1025), /longer than 1024/],
  ];
  for (const [text, why] of refused) {
    it(`refuses ${JSON.stringify(text.slice(0, 20))}`, () => {
      expect(() => parseLeaseResource(text)).toThrow(why);
    });
  }
});
