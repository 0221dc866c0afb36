import { createHash, verify } from "node:crypto";
import {
  BUNDLE_FORMAT,
  type BundleRecord,
  createSummary,
  type Manifest,
  RECORD_KINDS,
  type SignatureLine,
} from "./format.js";
import { fingerprint, publicKeyOf } from "./keys.js";

/** The longest line a bundle may hold; past it the bundle is refused (a reader holds one line). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** What checking a bundle found: every failed check named, and what it read. */
export interface BundleChecks {
  /** One sentence per failed check, each starting with the check's name. Empty: it holds. */
  failures: string[];
  manifest?: Manifest;
  /** The signer's public key (PEM) as the bundle names it. */
  publicKey?: string;
}

/**
 * Checks a bundle as its bytes stream past, holding one line at a time and the last two
 * (the manifest and signature lines come last, and a line is known to be a record only
 * once two more have followed it). `push` returns the records whose lines are complete;
 * `finish` runs the checks that need the manifest: its form (format), that it is signed by
 * the key the signature line names (signature) and, when `expectedKey` is given, that this
 * is that key (key), that the records hash to its SHA-256 (sha256), and that their counts
 * and inbox ranges are its own (counts, inboxes). Every check runs, so a bundle with
 * several faults names them all. A record handed out before `finish` is not yet vouched for.
 */
export interface BundleChecker {
  push(bytes: Uint8Array): BundleRecord[];
  finish(): BundleChecks;
}

export function createBundleChecker(expectedKey?: string): BundleChecker {
  const hash = createHash("sha256");
  const summary = createSummary();
  const failures: string[] = [];
  let partial: Buffer[] = [];
  let partialBytes = 0;
  const held: Buffer[] = [];
  let lineNo = 0;
  let badLines = 0;
  let tooLong = false;

  const record = (line: Buffer, out: BundleRecord[]) => {
    lineNo++;
    hash.update(line);
    hash.update("\n");
    if (line.length === 0) return;
    const r = parseLine(line) as BundleRecord | undefined;
    if (r === undefined || !(RECORD_KINDS as readonly string[]).includes(r.kind)) {
      if (badLines++ === 0) failures.push(`format: line ${lineNo} is not a record of a known kind`);
      return;
    }
    summary.add(r);
    out.push(r);
  };

  return {
    push(bytes) {
      const out: BundleRecord[] = [];
      if (tooLong) return out;
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      let start = 0;
      for (let end = buf.indexOf(10); end !== -1; end = buf.indexOf(10, start)) {
        const piece = buf.subarray(start, end);
        const line = partialBytes === 0 ? Buffer.from(piece) : Buffer.concat([...partial, piece]);
        partial = [];
        partialBytes = 0;
        start = end + 1;
        held.push(line);
        if (held.length > 2) record(held.shift() as Buffer, out);
      }
      if (start < buf.length) {
        partial.push(Buffer.from(buf.subarray(start)));
        partialBytes += buf.length - start;
        if (partialBytes > MAX_LINE_BYTES) {
          tooLong = true;
          partial = [];
          failures.push(
            `format: line ${lineNo + held.length + 1} is longer than ${MAX_LINE_BYTES} bytes`,
          );
        }
      }
      return out;
    },

    finish() {
      if (tooLong) return { failures };
      if (partialBytes > 0 || held.length < 2) {
        return {
          failures: [
            "format: not a bundle (it must end with a manifest line and a signature line)",
          ],
        };
      }
      const [manifestBytes, signatureBytes] = held as [Buffer, Buffer];
      const manifest = parseLine(manifestBytes) as Manifest | undefined;
      const signature = parseLine(signatureBytes) as SignatureLine | undefined;
      const form: string[] = [];
      if (manifest?.kind !== "manifest" || manifest.format !== BUNDLE_FORMAT) {
        form.push(`format: the next-to-last line is not a ${BUNDLE_FORMAT} manifest`);
      }
      if (signature?.kind !== "signature" || signature.algorithm !== "ed25519") {
        form.push("format: the last line is not an ed25519 signature line");
      }
      if (form.length > 0) return { failures: form };
      const m = manifest as Manifest;
      const s = signature as SignatureLine;
      const checks: string[] = [];
      const signer = publicKeyOf(s.public_key);
      if (signer === undefined) {
        checks.push("signature: the signature line's public key is no Ed25519 key");
      } else if (!verifySignature(manifestBytes, signer, s.signature)) {
        checks.push("signature: the manifest is not signed by the key the bundle names");
      }
      if (expectedKey !== undefined) {
        const expected = publicKeyOf(expectedKey);
        if (expected === undefined) checks.push("key: the expected key is no Ed25519 public key");
        else if (signer === undefined || fingerprint(expected) !== fingerprint(signer)) {
          checks.push(
            `key: the bundle is signed by key ${signer ? fingerprint(signer) : "(none)"}, ` +
              `not by the expected key ${fingerprint(expected)}`,
          );
        }
      }
      const digest = hash.digest("hex");
      if (digest !== m.sha256) {
        checks.push(`sha256: the records hash to ${digest}, the manifest says ${m.sha256}`);
      }
      checks.push(...failures);
      const found = summary.result();
      for (const kind of RECORD_KINDS) {
        const inBundle = found.counts[kind] ?? 0;
        const said = m.counts?.[kind] ?? 0;
        if (inBundle !== said) {
          checks.push(
            `counts: ${inBundle} ${kind} record(s) in the bundle, the manifest says ${said}`,
          );
        }
      }
      const names = new Set([...Object.keys(found.inboxes), ...Object.keys(m.inboxes ?? {})]);
      for (const name of [...names].sort()) {
        const a = found.inboxes[name];
        const b = m.inboxes?.[name];
        if (a?.first_seq !== b?.first_seq || a?.last_seq !== b?.last_seq) {
          checks.push(
            `inboxes: ${name}'s inbox holds seq ${rangeText(a)} in the bundle, the manifest says ${rangeText(b)}`,
          );
        }
      }
      return { failures: checks, manifest: m, publicKey: s.public_key };
    },
  };
}

function verifySignature(
  manifest: Buffer,
  signer: ReturnType<typeof publicKeyOf>,
  signature: unknown,
): boolean {
  try {
    return verify(
      null,
      manifest,
      signer as NonNullable<typeof signer>,
      Buffer.from(String(signature), "base64"),
    );
  } catch {
    return false;
  }
}

function rangeText(range: { first_seq: number; last_seq: number } | undefined): string {
  return range === undefined ? "nothing" : `${range.first_seq}..${range.last_seq}`;
}

function parseLine(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes).toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
