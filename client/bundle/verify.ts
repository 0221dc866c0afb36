import { type BundleChecks, createBundleChecker } from "./checker.js";
import type { BundleRecord } from "./format.js";

export { fingerprint, publicKeyOf } from "./keys.js";

/** What checking a whole bundle found, and its records (empty when its form is wrong). */
export interface BundleVerdict extends BundleChecks {
  records: BundleRecord[];
}

/**
 * Checks a bundle held in memory (tests, small bundles): the checks of createBundleChecker,
 * which streams; `team verify` and ImportTeam stream instead.
 */
export function verifyBundle(bytes: Uint8Array, expectedKey?: string): BundleVerdict {
  const checker = createBundleChecker(expectedKey);
  const records = checker.push(bytes);
  const checks = checker.finish();
  return { ...checks, records: checks.manifest === undefined ? [] : records };
}
