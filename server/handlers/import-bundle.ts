import { create } from "@bufbuild/protobuf";
import { createBundleChecker } from "@team-protocols/client/bundle/checker.js";
import type { BundleRecord } from "@team-protocols/client/bundle/format.js";
import {
  ImportedMemberSchema,
  type ImportTeamRequest,
  type ImportTeamResponse,
  ImportTeamResponseSchema,
} from "@team-protocols/contract/team/v1/export_pb.js";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { memberRoleWords, memberStatusWords } from "@team-protocols/contract/words.js";
import { NAME_PATTERN } from "../domain/limits.js";
import { DomainError, RuleViolationError } from "../errors.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Database } from "../store/database.js";
import { createTeamLoader, importError } from "../store/team-import.js";
import { generateToken, hashToken } from "../tokens.js";

/** Records loaded per batch: one INSERT per table each, memory bounded by one batch. */
export const IMPORT_BATCH_RECORDS = 1000;

export interface ImportBundleOptions {
  db: Database;
  /** This server's own public key (PEM), trusted when the request names none. */
  publicKey: string | undefined;
  importMaxBytes: number;
}

/**
 * ImportTeam: the bundle's chunks checked as they arrive (createBundleChecker) and loaded
 * in batches, all in one transaction. Whether the bundle holds is known only at its end
 * (the signed manifest is its last line but one), so a bundle that fails a check is rolled
 * back whole. A batch the database refuses stops the loading, but the rest is still read
 * and checked: a bundle that fails verification is refused as such (bundle-verify, the
 * stronger statement), and only a verified one is refused by what the database said.
 */
export async function importBundle(
  requests: AsyncIterable<ImportTeamRequest>,
  signal: AbortSignal,
  options: ImportBundleOptions,
): Promise<ImportTeamResponse> {
  const { db, importMaxBytes } = options;
  const iterator = requests[Symbol.asyncIterator]();
  const first = await iterator.next();
  const head = first.done ? undefined : first.value;
  if (head) checkRules({ method: TeamService.method.importTeam, request: head, caller: undefined });
  // Without a key in the request, only this server's own key is trusted: a bundle signed
  // by any key names that key itself, so the embedded key alone proves nothing.
  const expected = head?.publicKey ? head.publicKey : options.publicKey;
  if (expected === undefined) {
    throw new RuleViolationError(
      "bundle-verify",
      "failed-precondition",
      "public_key: give the key the bundle was signed with (`team export` printed it); " +
        "this server has no key of its own to trust",
      "public_key",
    );
  }
  const checker = createBundleChecker(expected);
  const tokens = new Map<string, string>();
  let team = head?.team ?? "";
  const nameFor = (record: BundleRecord) => {
    if (team === "") team = String(record.name ?? "");
    if (!NAME_PATTERN.test(team)) {
      throw new RuleViolationError(
        "size-shape",
        "invalid-argument",
        "team must match ^[a-z0-9][a-z0-9._-]{0,63}$",
        "team",
      );
    }
    return team;
  };
  const tokenHashFor = (member: BundleRecord) => {
    const token = generateToken();
    // A stopped member gets a hash nobody holds the token of: the lead re-adds it.
    if (member.status === "active") tokens.set(String(member.name), token);
    return hashToken(token);
  };

  const loaded = await db.transaction(async (tx) => {
    const loader = createTeamLoader(tx, nameFor, tokenHashFor);
    let failed: unknown;
    let batch: BundleRecord[] = [];
    const flush = async () => {
      const records = batch;
      batch = [];
      if (failed !== undefined || records.length === 0) return;
      try {
        await loader.add(records);
      } catch (err) {
        failed = err;
      }
    };
    let bytes = 0;
    let request = head;
    while (request !== undefined) {
      if (request !== head && (request.team !== "" || request.publicKey !== "")) {
        throw new RuleViolationError(
          "size-shape",
          "invalid-argument",
          "team and public_key go in the first request of the stream only",
          request.team !== "" ? "team" : "public_key",
        );
      }
      bytes += request.chunk.byteLength;
      if (bytes > importMaxBytes) {
        throw new DomainError(
          "resource-exhausted",
          `import-max-bytes: the bundle is larger than IMPORT_MAX_BYTES (${importMaxBytes} bytes); ` +
            "nothing stored",
        );
      }
      const records = checker.push(request.chunk);
      if (failed === undefined) {
        for (const r of records) batch.push(r);
        if (batch.length >= IMPORT_BATCH_RECORDS) await flush();
      }
      if (signal.aborted) throw signal.reason;
      const next = await iterator.next();
      request = next.done ? undefined : next.value;
    }
    await flush();
    const checks = checker.finish();
    if (checks.failures.length > 0) {
      throw new RuleViolationError(
        "bundle-verify",
        "failed-precondition",
        `the bundle was refused, nothing stored: ${checks.failures.join("; ")}`,
        "chunk",
      );
    }
    if (failed !== undefined) throw importError(failed, team);
    return { ...loader.finish(), counts: checks.manifest?.counts ?? {} };
  });
  return create(ImportTeamResponseSchema, {
    team,
    members: loaded.members.map((m) =>
      create(ImportedMemberSchema, {
        name: m.name,
        role: memberRoleWords.valueOf(m.role as never),
        status: memberStatusWords.valueOf(m.status as never),
        token: tokens.get(m.name) ?? "",
      }),
    ),
    counts: Object.fromEntries(Object.entries(loaded.counts).map(([kind, n]) => [kind, BigInt(n)])),
  });
}
