import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/child-server.js";
import {
  anchorsOf,
  brokenLinks,
  docFiles,
  guaranteeProblems,
  guaranteeRows,
  testNames,
} from "../support/doc-links.js";

/**
 * The docs are a guide a reader follows by its links: every relative link in the README and
 * docs/ must reach a file, and every #anchor a heading of it. The guarantees name the tests
 * that prove them: each must exist. Each check is also shown refusing a made-up mistake, so
 * a check that stopped looking would fail here.
 */

describe("links in the README and docs/", () => {
  const files = docFiles();

  it("reads the README, every page of docs/ and the benchmarks' README", () => {
    expect(files).toContain("README.md");
    expect(files).toContain("docs/protocols.md");
    expect(files).toContain("bench/README.md");
  });

  it.each(files)("every relative link and #anchor in %s resolves", (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it("the README links to every page of docs/", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    for (const page of files.filter((f) => f.startsWith("docs/"))) {
      expect(readme, `README.md links to ${page}`).toContain(`](${page})`);
    }
  });

  it("refuses a link to a missing file, a missing heading and a heading's old name", () => {
    const page = [
      "# A page",
      "## The `team` CLI",
      "[fine](#the-team-cli) [also fine](protocols.md#the-rules) [folder](../server)",
      "[gone](no-such-page.md) [moved](protocols.md#the-rule) [old name](#the-cli)",
      "`[in a code span](nowhere.md)`",
      "```",
      "[in a code block](nowhere.md)",
      "```",
    ].join("\n\n");
    expect(brokenLinks("docs/made-up.md", page)).toEqual([
      "no-such-page.md: no file docs/no-such-page.md",
      "protocols.md#the-rule: no heading #the-rule in docs/protocols.md",
      "#the-cli: no heading #the-cli in docs/made-up.md",
    ]);
  });

  it("names headings as GitHub does: code spans as text, punctuation dropped, repeats numbered", () => {
    const anchors = anchorsOf(
      "## Both flows with `buf curl`\n\n## Watching the team: WatchTeam, observers\n\n## Notes\n\n## Notes\n",
    );
    expect([...anchors]).toEqual([
      "both-flows-with-buf-curl",
      "watching-the-team-watchteam-observers",
      "notes",
      "notes-1",
    ]);
  });
});

describe("the guarantees name tests that exist", () => {
  const page = readFileSync(join(repoRoot, "docs/guarantees.md"), "utf8");

  it("every test named in docs/guarantees.md's table is a test file under test/", () => {
    const rows = guaranteeRows(page);
    expect(rows.length, "the guarantees table's rows").toBeGreaterThanOrEqual(10);
    expect(guaranteeProblems(rows, testNames())).toEqual([]);
  });

  it("refuses a misspelt test name and a row that names none", () => {
    const table = [
      "| guarantee | how | proved by |",
      "|---|---|---|",
      "| **No acknowledged message is lost** | commits first | `ledger`, `ledgr` |",
      "| **Untested** | we hope | nothing |",
    ].join("\n");
    expect(guaranteeProblems(guaranteeRows(table), testNames())).toEqual([
      "No acknowledged message is lost: names ledgr, which is no test file",
      "Untested: names no test",
    ]);
  });
});
