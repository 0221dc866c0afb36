import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ImportTeamRequestSchema } from "@team-protocols/contract/team/v1/export_pb.js";

/** Bytes of bundle per ImportTeam request: well under the server's 1 MiB message cap. */
export const IMPORT_CHUNK_BYTES = 256 * 1024;

export interface ImportRequestOptions {
  /** The new team's name; empty or unset: the bundle's. */
  team?: string;
  /** The PEM public key the bundle must be signed with; unset: the server's own. */
  publicKey?: string;
}

/**
 * ImportTeam's request stream for a bundle: its bytes (a buffer, or any stream of pieces,
 * such as a file's read stream) regrouped into IMPORT_CHUNK_BYTES chunks, the team name and
 * key on the first request. Reads the source only as the call sends, so a bundle of any
 * size is never held whole.
 */
export async function* importRequests(
  source: Uint8Array | AsyncIterable<Uint8Array>,
  options: ImportRequestOptions = {},
): AsyncGenerator<MessageInitShape<typeof ImportTeamRequestSchema>> {
  let first = true;
  const request = (chunk: Uint8Array) => {
    const r = first
      ? { chunk, team: options.team ?? "", publicKey: options.publicKey ?? "" }
      : { chunk };
    first = false;
    return r;
  };
  const pieces = source instanceof Uint8Array ? [source] : source;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  for await (const piece of pieces) {
    let rest = piece;
    while (pendingBytes + rest.byteLength >= IMPORT_CHUNK_BYTES) {
      const take = IMPORT_CHUNK_BYTES - pendingBytes;
      pending.push(rest.subarray(0, take));
      rest = rest.subarray(take);
      yield request(concat(pending, IMPORT_CHUNK_BYTES));
      pending = [];
      pendingBytes = 0;
    }
    if (rest.byteLength > 0) {
      pending.push(rest);
      pendingBytes += rest.byteLength;
    }
  }
  // The last piece, or one empty request for an empty source (the server then says why).
  if (pendingBytes > 0 || first) yield request(concat(pending, pendingBytes));
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
