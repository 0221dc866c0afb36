import { DomainError } from "../errors.js";

const MAX_BIGINT = 9_223_372_036_854_775_807n;

/**
 * Keyset pagination for the List calls: a page token is the position (a bigint in decimal)
 * of the last item of the previous page; the next page starts below it. "" is the first page.
 */
export function pageTokenPosition(token: string): bigint | undefined {
  if (token === "") return undefined;
  const position = /^[0-9]{1,19}$/.test(token) ? BigInt(token) : -1n;
  if (position < 0n || position > MAX_BIGINT) {
    throw new DomainError("invalid-argument", "page_token is not one this server gave out");
  }
  return position;
}

/** A page size as asked (0: the default), within bounds. */
export const pageSize = (asked: number, defaults: { page: number; max: number }): number =>
  Math.min(asked || defaults.page, defaults.max);

/**
 * The page of `rows` read with limit `size + 1` (one more than the page, to know whether more
 * follow), and the token of the next page: the last item's position, or "" at the end.
 */
export function keysetPage<T>(
  rows: T[],
  size: number,
  position: (row: T) => bigint,
): { page: T[]; nextPageToken: string } {
  const page = rows.slice(0, size);
  const last = page.at(-1);
  return {
    page,
    nextPageToken: rows.length > size && last !== undefined ? position(last).toString() : "",
  };
}
