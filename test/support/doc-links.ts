import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import GithubSlugger from "github-slugger";
import { marked, type Token, type Tokens } from "marked";
import { repoRoot } from "./child-server.js";

/**
 * What the docs test checks in the Markdown the project ships: that every relative link
 * reaches a file and every #anchor a heading of it (as GitHub names headings), and that every
 * test the guarantees name exists. Markdown is read with marked's lexer, so a link inside a
 * code block or a code span is not a link, and one inside a table is.
 */

/** The user docs: the README, every page of docs/, and the benchmarks' README. */
export function docFiles(): string[] {
  const pages = readdirSync(join(repoRoot, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`);
  return ["README.md", ...pages, "bench/README.md"];
}

/** The plain text of inline tokens, as GitHub renders a heading before making its anchor. */
function plainText(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((t) => ("tokens" in t && t.tokens ? plainText(t.tokens) : "text" in t ? t.text : ""))
    .join("");
}

/** The anchors GitHub gives the headings of a Markdown text (duplicates get -1, -2, ...). */
export function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  marked.walkTokens(marked.lexer(markdown), (token) => {
    if (token.type === "heading") {
      anchors.add(slugger.slug(plainText((token as Tokens.Heading).tokens)));
    }
  });
  return anchors;
}

/** Every link and image target of a Markdown text, in order. */
export function linksIn(markdown: string): string[] {
  const targets: string[] = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    if (token.type === "link" || token.type === "image") {
      targets.push((token as Tokens.Link | Tokens.Image).href);
    }
  });
  return targets;
}

/**
 * The links of one file (relative to the repository's root) that lead nowhere: a relative
 * path that names no file or folder, or an anchor that names no heading of its page. Links
 * with a scheme (https:, mailto:) are not followed. `markdown` stands in for the file's text.
 */
export function brokenLinks(
  file: string,
  markdown = readFileSync(join(repoRoot, file), "utf8"),
): string[] {
  const broken: string[] = [];
  for (const target of linksIn(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const hash = target.indexOf("#");
    const path = hash < 0 ? target : target.slice(0, hash);
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved = path === "" ? file : normalize(join(dirname(file), decodeURIComponent(path)));
    if (relative(repoRoot, join(repoRoot, resolved)).startsWith("..")) {
      broken.push(`${target}: leaves the repository`);
      continue;
    }
    const onDisk = join(repoRoot, resolved);
    if (path !== "" && !existsSync(onDisk)) {
      broken.push(`${target}: no file ${resolved}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith(".md")) {
      broken.push(`${target}: an anchor into ${resolved}, which is not Markdown`);
      continue;
    }
    const page = path === "" ? markdown : readFileSync(onDisk, "utf8");
    if (!anchorsOf(page).has(anchor))
      broken.push(`${target}: no heading #${anchor} in ${resolved}`);
  }
  return broken;
}

/** A row of the guarantees table: the guarantee's name and the tests its last column names. */
export interface GuaranteeRow {
  guarantee: string;
  tests: string[];
}

/**
 * The rows of the guarantees table (rows that start with a bold guarantee); the last column
 * names test files by their base name in backticks (`ledger` is test/<kind>/ledger.test.ts).
 */
export function guaranteeRows(markdown: string): GuaranteeRow[] {
  return markdown
    .split("\n")
    .filter((line) => line.startsWith("| **"))
    .map((line) => {
      const cells = line.split("|");
      const provedBy = cells.at(-2) ?? "";
      return {
        guarantee: /\*\*(.+?)\*\*/.exec(line)?.[1] ?? line.slice(0, 60),
        tests: [...provedBy.matchAll(/`([a-z0-9.-]+)`/g)].map((m) => m[1] as string),
      };
    });
}

/** The base names of every test file under test/ (`ledger` for test/process/ledger.test.ts). */
export function testNames(): Set<string> {
  return new Set(
    readdirSync(join(repoRoot, "test"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".test.ts"))
      .map((f) => (f.split("/").at(-1) as string).slice(0, -".test.ts".length)),
  );
}

/** What is wrong with a guarantees table: a row that names no test, or names one that is not. */
export function guaranteeProblems(rows: GuaranteeRow[], tests: Set<string>): string[] {
  const problems: string[] = [];
  for (const row of rows) {
    if (row.tests.length === 0) problems.push(`${row.guarantee}: names no test`);
    for (const name of row.tests) {
      if (!tests.has(name)) problems.push(`${row.guarantee}: names ${name}, which is no test file`);
    }
  }
  return problems;
}
