import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";

/** "14:03:07" in the browser's time zone; "never" when unset. */
export const clockTime = (t: Timestamp | undefined) =>
  t ? timestampDate(t).toLocaleTimeString([], { hour12: false }) : "never";

const pad = (n: number) => String(n).padStart(2, "0");

/**
 * "2026-12-03 14:03:07" in the browser's time zone: the feed and the inbox keep days of
 * history, so a time alone does not say when. "never" when unset.
 */
export function dateTime(t: Timestamp | undefined): string {
  if (!t) return "never";
  const d = timestampDate(t);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clockTime(t)}`;
}

/** The full ISO instant, for a title attribute. */
export const isoTime = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "");
