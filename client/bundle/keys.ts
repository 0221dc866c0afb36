import { createHash, createPublicKey, type KeyObject } from "node:crypto";

/** A short name for a public key: the first 16 hex digits of the SHA-256 of its DER form. */
export function fingerprint(key: KeyObject): string {
  return createHash("sha256")
    .update(key.export({ type: "spki", format: "der" }))
    .digest("hex")
    .slice(0, 16);
}

/** An Ed25519 public key from PEM (or from the PEM of its private key), or undefined. */
export function publicKeyOf(pem: string): KeyObject | undefined {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === "ed25519" ? key : undefined;
  } catch {
    return undefined;
  }
}
