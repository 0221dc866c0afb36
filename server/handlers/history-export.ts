import { createHash, createPublicKey, type KeyObject, sign } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  BUNDLE_FORMAT,
  createSummary,
  lineOf,
  type Manifest,
  type SignatureLine,
} from "@team-protocols/client/bundle/format.js";
import { ExportTeamResponseSchema } from "@team-protocols/contract/team/v1/export_pb.js";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { requireCaller } from "../caller.js";
import { DomainError } from "../errors.js";
import { checkRules } from "../interceptors/rules/table.js";
import type { Database } from "../store/database.js";
import { readTeamRecordPages } from "../store/team-export.js";
import { throwIfDeadlinePassed } from "./deadline.js";
import { importBundle } from "./import-bundle.js";

/** Bytes of bundle per ExportTeam response: whole lines, about this many. */
const CHUNK_BYTES = 64 * 1024;

export interface HistoryExportOptions {
  db: Database;
  /** The Ed25519 key bundles are signed with; undefined: ExportTeam is refused (export/signing-key.ts). */
  signingKey: KeyObject | undefined;
  /** The largest bundle ImportTeam loads (IMPORT_MAX_BYTES). */
  importMaxBytes: number;
}

/** ExportTeam and ImportTeam: the team's history as a signed bundle, and back (docs/export.md). */
export function historyExportHandlers(
  options: HistoryExportOptions,
): Pick<ServiceImpl<typeof TeamService>, "exportTeam" | "importTeam"> {
  const { db, signingKey, importMaxBytes } = options;
  const publicKey = signingKey
    ? (createPublicKey(signingKey).export({ type: "spki", format: "pem" }) as string)
    : undefined;
  return {
    async *exportTeam(req, ctx) {
      const caller = requireCaller(ctx.values);
      // Streams do not pass the rules interceptor: export-lead-or-observer applied here.
      checkRules({ method: TeamService.method.exportTeam, request: req, caller });
      if (signingKey === undefined || publicKey === undefined) {
        throw new DomainError(
          "failed-precondition",
          "export-signing-key: this server has no key to sign exports with; set EXPORT_SIGNING_KEY " +
            "(an Ed25519 private key in PEM, or its file's path)",
        );
      }
      // A call whose deadline has passed gets no bundle (the read may have outlived it).
      throwIfDeadlinePassed(ctx.signal);
      // Records are read a page at a time (one transaction, a consistent snapshot), turned
      // into lines, hashed and counted as they go, and sent in chunks of whole lines: the
      // server holds a page and a chunk, never the bundle.
      const hash = createHash("sha256");
      const summary = createSummary();
      let chunk: string[] = [];
      let chunkLength = 0;
      for await (const page of readTeamRecordPages(db, caller.teamId)) {
        throwIfDeadlinePassed(ctx.signal);
        for (const record of page) {
          const line = lineOf(record);
          hash.update(line);
          summary.add(record);
          chunk.push(line);
          chunkLength += line.length;
          if (chunkLength >= CHUNK_BYTES) {
            yield create(ExportTeamResponseSchema, { chunk: Buffer.from(chunk.join("")) });
            chunk = [];
            chunkLength = 0;
          }
        }
      }
      const counted = summary.result();
      const manifest: Manifest = {
        kind: "manifest",
        format: BUNDLE_FORMAT,
        team: caller.teamName,
        exported_at: new Date().toISOString(),
        ...counted,
        sha256: hash.digest("hex"),
      };
      const manifestText = JSON.stringify(manifest);
      const signature: SignatureLine = {
        kind: "signature",
        algorithm: "ed25519",
        public_key: publicKey,
        signature: sign(null, Buffer.from(manifestText), signingKey).toString("base64"),
      };
      chunk.push(`${manifestText}\n`, lineOf(signature));
      yield create(ExportTeamResponseSchema, {
        chunk: Buffer.from(chunk.join("")),
        publicKey,
        counts: Object.fromEntries(
          Object.entries(counted.counts).map(([kind, n]) => [kind, BigInt(n)]),
        ),
      });
    },

    async importTeam(requests, ctx) {
      return importBundle(requests, ctx.signal, { db, publicKey, importMaxBytes });
    },
  };
}
