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
