import { createHash, type KeyObject, sign } from "node:crypto";
import { type BundleRecord, summarize } from "../../client/bundle/format.js";
import type { TeamClient } from "./harness.js";

/** The bundle ExportTeam streams, as one buffer, and what its last response said. */
export async function exportBundle(
  client: TeamClient,
): Promise<{ bytes: Buffer; publicKey: string; counts: Record<string, bigint> }> {
  const parts: Buffer[] = [];
  let publicKey = "";
  let counts: Record<string, bigint> = {};
  for await (const res of client.exportTeam({})) {
    parts.push(Buffer.from(res.chunk));
    if (res.publicKey !== "") {
      publicKey = res.publicKey;
      counts = res.counts;
    }
  }
  return { bytes: Buffer.concat(parts), publicKey, counts };
}

/** A bundle's lines (each without its "\n"). */
export const linesOf = (bytes: Buffer): string[] => bytes.toString("utf8").split("\n").slice(0, -1);

/** Lines back into a bundle. */
export const bundleOf = (lines: string[]): Buffer => Buffer.from(`${lines.join("\n")}\n`);

/**
 * The bundle's records with a fresh manifest (sha256, counts and inboxes as they are now) signed by
 * `key`: what a forger holding another key could make.
 */
export function resigned(bytes: Buffer, key: KeyObject, publicKeyPem: string): Buffer {
  const lines = linesOf(bytes);
  const records = lines.slice(0, -2);
  const manifest = JSON.parse(lines[lines.length - 2] as string);
  const content = records.map((l) => `${l}\n`).join("");
  manifest.sha256 = createHash("sha256").update(content).digest("hex");
  Object.assign(manifest, summarize(records.map((l) => JSON.parse(l) as BundleRecord)));
  const manifestText = JSON.stringify(manifest);
  const signature = {
    kind: "signature",
    algorithm: "ed25519",
    public_key: publicKeyPem,
    signature: sign(null, Buffer.from(manifestText), key).toString("base64"),
  };
  return bundleOf([...records, manifestText, JSON.stringify(signature)]);
}
