/**
 * Where a WatchTeam stream is (docs/watch.md). Everything visible in `since` was delivered;
 * when `window` is set, so were the events visible in `window.upto` but not in `since` with a
 * position up to `window.after`, and the next read continues in that same window.
 * Snapshots are PostgreSQL pg_snapshot text, "xmin:xmax:xip,xip,...".
 */
export interface FeedCursor {
  since: string;
  window?: { upto: string; after: bigint };
}

/** The snapshot in which nothing is visible: a feed from it starts at the oldest event kept. */
export const EMPTY_SNAPSHOT = "1:1:";

/** A cursor fits in this many characters (two snapshots of a busy server, with room). */
export const MAX_CURSOR_CHARS = 8 * 1024;

// Cursors are text a client may change: everything is checked before PostgreSQL parses it,
// so a forged cursor is a typed refusal, not a database error.
const SNAPSHOT = /^([0-9]{1,20}):([0-9]{1,20}):([0-9]{1,20}(?:,[0-9]{1,20})*)?$/;
const MAX_XID8 = 18_446_744_073_709_551_615n;

export const encodeCursor = (c: FeedCursor): string =>
  c.window ? `${c.since}/${c.window.upto}/${c.window.after}` : c.since;

/** Parses a cursor a client sent back; undefined if it is not one this server gives out. */
export function decodeCursor(text: string): FeedCursor | undefined {
  const parts = text.split("/");
  const [since, upto, after] = parts;
  const valid =
    text.length <= MAX_CURSOR_CHARS &&
    (parts.length === 1 || parts.length === 3) &&
    isSnapshot(since) &&
    (upto === undefined || isSnapshot(upto)) &&
    (after === undefined || /^[0-9]{1,19}$/.test(after));
  if (!valid || since === undefined) return undefined;
  return upto === undefined || after === undefined
    ? { since }
    : { since, window: { upto, after: BigInt(after) } };
}

/** xmin <= every xip < xmax, xips strictly ascending: what pg_snapshot's input accepts. */
function isSnapshot(text: string | undefined): boolean {
  const m = text === undefined ? null : SNAPSHOT.exec(text);
  if (!m) return false;
  const xmin = BigInt(m[1] as string);
  const xmax = BigInt(m[2] as string);
  if (xmin < 1n || xmin > xmax || xmax > MAX_XID8) return false;
  let previous = xmin - 1n;
  for (const part of m[3] ? m[3].split(",") : []) {
    const xip = BigInt(part);
    if (xip <= previous || xip >= xmax) return false;
    previous = xip;
  }
  return true;
}
