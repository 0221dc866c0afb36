import { createHash, hash, randomBytes, timingSafeEqual } from "node:crypto";

const TOKEN_PREFIX = "tp_";

/** A new bearer token: 256 random bits, base64url, with a recognisable prefix. */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

/**
 * What the database keeps instead of the token. Tokens carry 256 random bits, so a fast
 * hash is enough: nothing can be guessed or brute-forced from it.
 */
export function hashToken(token: string): Uint8Array {
  return Buffer.from(tokenHashHex(token), "hex");
}

/**
 * The same hash as hex: the caller cache's key, made on every call. Node's one-shot hash()
 * takes a fraction of the time createHash().update().digest() does.
 */
export function tokenHashHex(token: string): string {
  return hash("sha256", token, "hex");
}

/** Whether a header value looks like one of our tokens (before any database look-up). */
export function isWellFormedToken(token: string): boolean {
  return /^tp_[A-Za-z0-9_-]{43}$/.test(token);
}

/** Constant-time comparison of two secrets. */
export function secretsEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}
