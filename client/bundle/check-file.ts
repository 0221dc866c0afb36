import { createReadStream } from "node:fs";
import { type BundleChecks, createBundleChecker } from "./checker.js";

/**
 * Checks a bundle file as createBundleChecker does, reading it in pieces: a bundle of any
 * size is checked holding one line at a time.
 */
export async function checkBundleFile(path: string, expectedKey?: string): Promise<BundleChecks> {
  const checker = createBundleChecker(expectedKey);
  for await (const piece of createReadStream(path, { highWaterMark: 256 * 1024 })) {
    checker.push(piece as Buffer);
  }
  return checker.finish();
}
