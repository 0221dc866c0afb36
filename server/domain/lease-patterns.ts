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
 * intersect iff the product of their automata reaches the end, which the tables below
 * decide in time bounded by the patterns' lengths.
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

/**
 * Some sequence of path segments matches both segment lists. A table, not a recursive walk:
 * `ok[i][j]` says whether the rests `a[i..]` and `b[j..]` match a common sequence, filled
 * from the ends so each cell reads only cells already known. The work is bounded by the
 * patterns' lengths (at most 1024 × 1024 character pairs in all, segmentsIntersect below
 * included), so no pair of resources can hold the server for long: a memoised recursion over
 * a Map took seconds on two 1,024-character globs (bench/README.md, "Leases").
 */
function globsIntersect(a: string[], b: string[]): boolean {
  const w = b.length + 1;
  const ok = new Uint8Array((a.length + 1) * w);
  const at = (i: number, j: number) => ok[i * w + j] === 1;
  for (let i = a.length; i >= 0; i--) {
    for (let j = b.length; j >= 0; j--) {
      const sa = a[i];
      const sb = b[j];
      let r: boolean;
      if (sa === undefined && sb === undefined) r = true;
      // A `**` ends here, or also takes the other side's segment, whatever that segment's
      // pattern is (some concrete segment matches it), and goes on.
      else if (sa === "**") r = at(i + 1, j) || (sb !== undefined && at(i, j + 1));
      else if (sb === "**") r = at(i, j + 1) || (sa !== undefined && at(i + 1, j));
      else if (sa === undefined || sb === undefined) r = false;
      else r = at(i + 1, j + 1) && segmentsIntersect(sa, sb);
      ok[i * w + j] = r ? 1 : 0;
    }
  }
  return at(0, 0);
}

/**
 * Some non-empty string without `/` matches both segment patterns. The same table over
 * characters: `ok[i][j]` says whether `a[i..]` and `b[j..]` match a common string. Emptiness
 * needs no care: segments are never empty, and two patterns whose only common string were ""
 * would both be all `*`, which match any one character too.
 */
function segmentsIntersect(a: string, b: string): boolean {
  const STAR = 42; // "*"
  const ANY = 63; // "?"
  const la = a.length;
  const lb = b.length;
  const w = lb + 1;
  const ok = new Uint8Array((la + 1) * w);
  ok[la * w + lb] = 1;
  for (let i = la; i >= 0; i--) {
    const ca = i < la ? a.charCodeAt(i) : -1;
    for (let j = i === la ? lb - 1 : lb; j >= 0; j--) {
      const cb = j < lb ? b.charCodeAt(j) : -1;
      let r = 0;
      // A `*` may take nothing more.
      if (ca === STAR) r = ok[(i + 1) * w + j] as number;
      if (r === 0 && cb === STAR) r = ok[i * w + j + 1] as number;
      if (r === 0 && ca !== -1 && cb !== -1) {
        // One character both sides take: a `*` takes it and stays, `?` takes any, a literal
        // itself. (Two `*` taking it together and staying is this cell: it adds nothing.)
        if (ca === STAR) {
          if (cb !== STAR) r = ok[i * w + j + 1] as number;
        } else if (cb === STAR) r = ok[(i + 1) * w + j] as number;
        else if (ca === ANY || cb === ANY || ca === cb) r = ok[(i + 1) * w + j + 1] as number;
      }
      ok[i * w + j] = r;
    }
  }
  return ok[0] === 1;
}
