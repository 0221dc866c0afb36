import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Code } from "@connectrpc/connect";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The code samples of the README and docs/, read from the Markdown files themselves, and what
 * it takes to run their shell samples step by step: shell definitions carried from step to step, `tp_...` placeholders
 * bound to the tokens earlier steps printed, example request ids bound to the ones the
 * server returned, and the output comments (`# {...}`, `# -> {...}`) turned into checks.
 */

export interface CodeBlock {
  /** The file it is in, relative to the repository's root (`docs/protocols.md`). */
  file: string;
  /** The heading the block sits under (its text, without the #s). */
  heading: string;
  lang: string;
  code: string;
  /** 1-based line of the opening fence in its file. */
  line: number;
}

/** The fenced code blocks of a Markdown file, `file` relative to the repository's root. */
export function markdownBlocks(file: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let heading = "";
  let open: { lang: string; line: number; lines: string[] } | undefined;
  readFileSync(join(repoRoot, file), "utf8")
    .split("\n")
    .forEach((text, i) => {
      if (open) {
        if (/^```\s*$/.test(text)) {
          blocks.push({
            file,
            heading,
            lang: open.lang,
            code: open.lines.join("\n"),
            line: open.line,
          });
          open = undefined;
        } else {
          open.lines.push(text);
        }
        return;
      }
      const fence = /^```(\S*)/.exec(text);
      if (fence) open = { lang: fence[1] ?? "", line: i + 1, lines: [] };
      const h = /^#{1,6}\s+(.*)$/.exec(text);
      if (h) heading = (h[1] ?? "").trim();
    });
  return blocks;
}

/** The first block of one language under the heading that starts with `heading`. */
export function blockUnder(blocks: CodeBlock[], heading: string, lang: string): CodeBlock {
  return blocksUnder(blocks, heading, lang)[0] as CodeBlock;
}

/** The blocks of one language under the heading that starts with `heading`; at least one. */
export function blocksUnder(blocks: CodeBlock[], heading: string, lang: string): CodeBlock[] {
  const found = blocks.filter((b) => b.heading.startsWith(heading) && b.lang === lang);
  if (found.length === 0) {
    const files = [...new Set(blocks.map((b) => b.file))].join(", ");
    throw new Error(`${files} has no \`\`\`${lang} block under a heading "${heading}…"`);
  }
  return found;
}

/** A step of a shell sample. */
export type Step =
  /** A definition the later steps rely on (`U=...`, `call() { ... }`), run before each. */
  | { kind: "define"; text: string; line: number }
  /** `NAME=tp_...`: the token the previous command printed, exported as NAME. */
  | { kind: "bind"; name: string; line: number }
  /** A command, with the output the sample shows for it (comment lines after it). */
  | { kind: "run"; text: string; line: number; shown: string };

/** Splits a shell sample into steps; `firstLine` is the block's fence line, for messages. */
export function shellSteps(code: string, firstLine = 0): Step[] {
  const steps: Step[] = [];
  const lines = code.split("\n");
  let last: Extract<Step, { kind: "run" }> | undefined;
  let shownOpen = false;
  for (let i = 0; i < lines.length; i++) {
    const line = firstLine + 1 + i;
    const text = lines[i] ?? "";
    if (text.trim() === "") {
      last = undefined;
      continue;
    }
    const comment = /^\s*#\s?(.*)$/.exec(text);
    if (comment) {
      const body = comment[1] ?? "";
      // Output shown for the command just above: `# {...}`, `# -> ...`, and their continuations.
      if (last && (shownOpen || /^(->|\{)/.test(body.trim()))) {
        last.shown += `${body.trim().replace(/^->\s*/, "")}\n`;
        shownOpen = true;
      } else {
        last = undefined;
      }
      continue;
    }
    shownOpen = false;
    const assignment = /^([A-Za-z_]\w*)=(\S*)\s*(#.*)?$/.exec(text);
    if (assignment) {
      const [, name = "", value = ""] = assignment;
      if (value === "tp_...") steps.push({ kind: "bind", name, line });
      else steps.push({ kind: "define", text, line });
      last = undefined;
      continue;
    }
    if (/^\w+\(\)\s*\{.*\}\s*$/.test(text)) {
      steps.push({ kind: "define", text, line });
      last = undefined;
      continue;
    }
    let command = text;
    while (command.endsWith("\\") && i + 1 < lines.length) {
      i++;
      command += `\n${lines[i] ?? ""}`;
    }
    last = { kind: "run", text: command, line, shown: "" };
    steps.push(last);
  }
  return steps;
}

/**
 * Example request ids in a sample (`req_sCeliqsKR_Zi5279EPir5w`, `req_sCel...`) stand for the
 * ids the server returns: the first four characters after `req_` name one request. Each
 * example id, where it first appears, stands for the newest request the server has returned
 * that no earlier example id stands for.
 */
export class RequestIds {
  private readonly returned: string[] = [];
  private readonly bound = new Map<string, string>();

  /** Records the request ids a response carries (`requestId` anywhere in it). */
  saw(objects: unknown[]): void {
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(visit);
      else if (node && typeof node === "object") {
        for (const [key, value] of Object.entries(node)) {
          if (key === "requestId" && typeof value === "string") {
            if (value && !this.returned.includes(value)) this.returned.push(value);
          } else visit(value);
        }
      }
    };
    objects.forEach(visit);
  }

  /** The text with every example id replaced by the real one. */
  substitute(text: string): string {
    return text.replace(/req_[A-Za-z0-9_-]+(?:\.\.\.)?/g, (example) => {
      const key = example.slice(0, 8);
      let real = this.bound.get(key);
      if (!real) {
        const taken = new Set(this.bound.values());
        real = [...this.returned].reverse().find((id) => !taken.has(id));
        if (!real) throw new Error(`no request id returned so far for the example id ${example}`);
        this.bound.set(key, real);
      }
      return real;
    });
  }
}

/** The JSON values printed one after another (buf curl prints each message pretty). */
export function jsonObjects(output: string): unknown[] {
  const objects: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < output.length; i++) {
    const c = output[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") {
      if (depth++ === 0) start = i;
    } else if (c === "}" && depth > 0 && --depth === 0) {
      objects.push(JSON.parse(output.slice(start, i + 1)));
    }
  }
  return objects;
}

/**
 * The output a sample's comment shows, as checks: one per shown object (`{...}`, or a run of
 * fields ending with one), each a list of `"key":value` strings the printed JSON (compact)
 * must contain within one object that has the shown object's first key. A string value ending
 * in `...` is shown cut: its beginning must match. Elided parts (`...`) are not checked.
 */
export interface ShownObject {
  text: string;
  firstKey: string;
  needles: string[];
}

export function shownObjects(shown: string): ShownObject[] {
  const chunks: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < shown.length; i++) {
    const c = shown[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) {
      chunks.push(shown.slice(start, i + 1).trim());
      start = i + 1;
    }
  }
  return chunks
    .filter((chunk) => chunk !== "")
    .map((text) => {
      const needles: string[] = [];
      const pair = /"([A-Za-z_]\w*)":\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)/g;
      for (const [, key, value = ""] of text.matchAll(pair)) {
        needles.push(
          value.endsWith('..."') ? `"${key}":${value.slice(0, -4)}` : `"${key}":${value}`,
        );
      }
      const firstKey = /"([A-Za-z_]\w*)":/.exec(text)?.[1] ?? "";
      return { text, firstKey, needles };
    });
}

/** Whether the printed objects hold what one shown object says, and what it did not find. */
export function findShown(objects: unknown[], shown: ShownObject): string[] {
  const candidates: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === "object") {
      if (Object.hasOwn(node, shown.firstKey)) candidates.push(JSON.stringify(node));
      Object.values(node).forEach(visit);
    }
  };
  objects.forEach(visit);
  let best: string[] | undefined;
  for (const candidate of candidates) {
    const missing = shown.needles.filter((needle) => !candidate.includes(needle));
    if (!best || missing.length < best.length) best = missing;
  }
  return best ?? [`an object with "${shown.firstKey}"`];
}

/** The Connect code a shown refusal names (`{"code":"invalid_argument",...}`), if any. */
export function shownRefusal(shown: ShownObject[]): Code | undefined {
  const name = /^\{\s*"code":\s*"([a-z_]+)"/.exec(shown[0]?.text ?? "")?.[1];
  if (!name) return undefined;
  const camel = name.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
  const code = (Code as unknown as Record<string, Code | undefined>)[camel];
  if (code === undefined) throw new Error(`a sample shows an unknown code "${name}"`);
  return code;
}

/** Whether a command calls a server-streaming method of TeamService (it never ends by itself). */
export function callsServerStream(command: string): boolean {
  const method = /team\.v1\.TeamService\/(\w+)/.exec(command)?.[1];
  if (!method) return false;
  const found = TeamService.methods.find((m) => m.name === method);
  if (!found) throw new Error(`a sample calls TeamService/${method}, which the service lacks`);
  return found.methodKind === "server_streaming";
}

export interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script with bash in its own process group. With `until`, stops the group (SIGTERM)
 * as soon as `until(stdout)` holds: for commands that stream until interrupted. `signal`
 * stops it too (a test giving up), and so does `timeoutMs`.
 */
export function runBash(
  script: string,
  options: {
    cwd: string;
    env?: Record<string, string>;
    timeoutMs: number;
    until?: (stdout: string) => boolean;
    signal?: AbortSignal;
  },
): Promise<ShellResult & { stopped: boolean }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", script], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    let stopped = false;
    const stop = () => {
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {
          // already gone
        }
      }
    };
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${options.timeoutMs} ms]`;
      stop();
    }, options.timeoutMs);
    options.signal?.addEventListener("abort", stop, { once: true });
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      if (!stopped && options.until?.(stdout)) {
        stopped = true;
        stop();
      }
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", stop);
      resolve({ code, stdout, stderr, stopped });
    });
  });
}
