/**
 * What a lease covers, and when two leases cover something in common.
 *
 * A resource is either a named resource, `kind:name` (`task:parser`, `db:migrations`), or a
 * path glob relative to the team's repository (`src/parser/**`, `README.md`). The rule,
 * written down once (docs/protocols.md, "Leases", shows it as a table):
 *
 * - A named resource overlaps only the same named resource, character for character, and
 *   never a path.
 * - Two path globs overlap when some path matches both. In a glob, a segment `**` matches
 *   any number of whole segments (none too), `*` any run of characters inside one segment,
 *   `?` one character; every other character is itself. So `src/**` and `src/a/*.ts`
 *   overlap (`src/a/x.ts`), `src/*.ts` and `src/a/*.ts` do not (a `*` never crosses `/`),
 *   `docs/**` overlaps `docs` (zero segments), and `docs/` means `docs/**`.
 *
 * Both tests are exact (no "maybe"): a path glob is a regular language and two of them
 * intersect iff the product of their automata reaches the end, which the memoised walks
 * below explore.
 */

export type LeaseResource =
  | { kind: "named"; text: string }
  | { kind: "path"; text: string; segments: string[] };

/** `kind:` prefixes; anything else with a colon is refused, so a typo is not a path. */
const NAMED = /^([a-z][a-z0-9_-]{0,31}):(.+)$/;

export class LeaseResourceError extends Error {}

/**
 * Parses a lease's resource, refusing what could not mean one place in a repository: an
 * absolute path, `..`, `.` or empty segments, backslashes, control characters.
 */
export function parseLeaseResource(text: string): LeaseResource {
  if (text.length === 0) throw new LeaseResourceError("is empty");
  if (text.length > 1024) throw new LeaseResourceError("is longer than 1024 characters");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters.
  if (/[\u0000-\u001f\u007f]/.test(text)) {
    throw new LeaseResourceError("holds a control character");
  }
  const named = NAMED.exec(text);
  if (named) return { kind: "named", text };
  if (text.includes(":")) {
    throw new LeaseResourceError(
      "has a colon but is not kind:name (a lowercase kind such as task: or db:)",
    );
  }
  if (text.includes("\\")) throw new LeaseResourceError("uses \\: separate path segments with /");
  if (text.startsWith("/")) {
    throw new LeaseResourceError("is absolute: give a path relative to the repository");
  }
  // A trailing slash leases a folder: everything under it.
  const segments = text.endsWith("/") ? `${text}**`.split("/") : text.split("/");
  for (const s of segments) {
    if (s === "" || s === "." || s === "..") {
      throw new LeaseResourceError(
        `has a "${s === "" ? "//" : s}" segment: write the path plainly`,
      );
    }
    if (s.includes("**") && s !== "**") {
      throw new LeaseResourceError(`has "**" inside a segment ("${s}"): ** stands alone`);
    }
  }
  return { kind: "path", text, segments };
}

/** Whether some concrete thing is covered by both resources. */
export function resourcesOverlap(a: LeaseResource, b: LeaseResource): boolean {
  if (a.kind === "named" || b.kind === "named") return a.kind === b.kind && a.text === b.text;
  return globsIntersect(a.segments, b.segments);
}

/** Whether two leases conflict: they overlap and at least one of them is exclusive. */
export function leasesConflict(
  a: { resource: LeaseResource; mode: LeaseMode },
  b: { resource: LeaseResource; mode: LeaseMode },
): boolean {
  if (a.mode === "shared" && b.mode === "shared") return false;
  return resourcesOverlap(a.resource, b.resource);
}

export type LeaseMode = "exclusive" | "shared";

/** Some sequence of path segments matches both segment lists. */
function globsIntersect(a: string[], b: string[]): boolean {
  const seen = new Map<number, boolean>();
  const walk = (i: number, j: number): boolean => {
    const key = i * (b.length + 1) + j;
    const known = seen.get(key);
    if (known !== undefined) return known;
    seen.set(key, false); // a cycle adds nothing new
    let result: boolean;
    if (i === a.length && j === b.length) result = true;
    else if (i === a.length) result = b.slice(j).every((s) => s === "**");
    else if (j === b.length) result = a.slice(i).every((s) => s === "**");
    else if (a[i] === "**" && b[j] === "**") result = walk(i + 1, j) || walk(i, j + 1);
    // A `**` ends here (matched what it matched) or also takes the other side's segment,
    // whatever that segment's pattern is: some concrete segment matches it.
    else if (a[i] === "**") result = walk(i + 1, j) || walk(i, j + 1);
    else if (b[j] === "**") result = walk(i, j + 1) || walk(i + 1, j);
    else result = segmentsIntersect(a[i] ?? "", b[j] ?? "") && walk(i + 1, j + 1);
    seen.set(key, result);
    return result;
  };
  return walk(0, 0);
}

/** Some non-empty string without `/` matches both segment patterns. */
function segmentsIntersect(a: string, b: string): boolean {
  const seen = new Map<number, boolean>();
  // Whether the rest a[i..] and b[j..] match a common string; `consumed` says whether a
  // character was taken yet (a segment is never empty).
  const walk = (i: number, j: number, consumed: boolean): boolean => {
    const key = (i * (b.length + 1) + j) * 2 + (consumed ? 1 : 0);
    const known = seen.get(key);
    if (known !== undefined) return known;
    seen.set(key, false);
    const ca = a[i];
    const cb = b[j];
    let result = false;
    if (ca === undefined && cb === undefined) result = consumed;
    else if (ca === "*" && walk(i + 1, j, consumed)) result = true;
    else if (cb === "*" && walk(i, j + 1, consumed)) result = true;
    else if (ca !== undefined && cb !== undefined) {
      // Both take one character: a `*` may take it and stay, `?` takes any, a literal itself.
      const nextI = ca === "*" ? i : i + 1;
      const nextJ = cb === "*" ? j : j + 1;
      const wildA = ca === "*" || ca === "?";
      const wildB = cb === "*" || cb === "?";
      if ((wildA || wildB || ca === cb) && (nextI !== i || nextJ !== j)) {
        result = walk(nextI, nextJ, true);
      } else if (wildA && wildB && nextI === i && nextJ === j) {
        // Both are `*`: they can take characters together forever; what counts is the rest.
        result = walk(i + 1, j, true) || walk(i, j + 1, true);
      }
    }
    seen.set(key, result);
    return result;
  };
  return walk(0, 0, false);
}
