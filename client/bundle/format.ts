/**
 * The export bundle's format (docs/export.md): JSON Lines, one record a line, each with a
 * `kind`; then a manifest line and a signature line. Shared by the server that writes and
 * imports bundles and the CLI that checks them offline, so both count the same way.
 */

export const BUNDLE_FORMAT = "team-protocols-export/1";

/** The record kinds, in the order a bundle holds them (the history ones interleaved). */
export const RECORD_KINDS = [
  "team",
  "member",
  "task",
  "task_dependency",
  "request",
  "envelope",
  "request_event",
  "member_event",
  "task_event",
  "journal",
  "cursor",
] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

/** One record line, parsed. Every kind's fields are the ones docs/export.md lists. */
export type BundleRecord = { kind: RecordKind } & Record<string, unknown>;

export interface InboxRange {
  first_seq: number;
  last_seq: number;
}

export interface Manifest {
  kind: "manifest";
  format: string;
  team: string;
  exported_at: string;
  /** Records per kind (every kind, zeros included). */
  counts: Record<string, number>;
  /** Per member name: the first and last seq of its inbox in the bundle (members with envelopes). */
  inboxes: Record<string, InboxRange>;
  /** SHA-256 (hex) of every byte before the manifest line. */
  sha256: string;
}

export interface SignatureLine {
  kind: "signature";
  algorithm: "ed25519";
  /** The signer's public key, PEM (SubjectPublicKeyInfo). */
  public_key: string;
  /** Ed25519 signature (base64) of the manifest line's bytes, without its "\n". */
  signature: string;
}

/** Counts and inbox ranges of a list of records: what a manifest must say about them. */
export function summarize(records: readonly BundleRecord[]): Pick<Manifest, "counts" | "inboxes"> {
  const summary = createSummary();
  for (const record of records) summary.add(record);
  return summary.result();
}

/** A summary taken record by record, so a bundle is counted as it streams past. */
export interface Summary {
  add(record: BundleRecord): void;
  result(): Pick<Manifest, "counts" | "inboxes">;
}

export function createSummary(): Summary {
  const counts: Record<string, number> = Object.fromEntries(RECORD_KINDS.map((k) => [k, 0]));
  const inboxes: Record<string, InboxRange> = {};
  return {
    add(record) {
      counts[record.kind] = (counts[record.kind] ?? 0) + 1;
      if (record.kind !== "envelope") return;
      const inbox = String(record.inbox);
      const seq = Number(record.seq);
      const range = inboxes[inbox];
      if (range === undefined) inboxes[inbox] = { first_seq: seq, last_seq: seq };
      else {
        range.first_seq = Math.min(range.first_seq, seq);
        range.last_seq = Math.max(range.last_seq, seq);
      }
    },
    result: () => ({ counts: { ...counts }, inboxes: structuredClone(inboxes) }),
  };
}

/** A record as its line: JSON and "\n". */
export function lineOf(value: object): string {
  return `${JSON.stringify(value)}\n`;
}
