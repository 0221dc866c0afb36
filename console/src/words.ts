import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";

/** "14:03:07" in the browser's time zone; "never" when unset. */
export const clockTime = (t: Timestamp | undefined) =>
  t ? timestampDate(t).toLocaleTimeString([], { hour12: false }) : "never";

/** The full ISO instant, for a title attribute. */
export const isoTime = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "");
