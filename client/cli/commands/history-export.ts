import { once } from "node:events";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { finished } from "node:stream/promises";
import { checkBundleFile } from "@team-protocols/client/bundle/check-file.js";
import { importRequests } from "@team-protocols/client/bundle/import-requests.js";
import { fingerprint, publicKeyOf } from "@team-protocols/client/bundle/keys.js";
import { memberRoleName, memberStatusName } from "@team-protocols/client/names.js";
import type { Command } from "commander";
import {
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  QuietExit,
  UsageError,
} from "../context.js";

/** export, verify, import: a team's history as a signed bundle (docs/export.md). */
export function historyExportCommands(program: Command): void {
  connectionOptions(
    program
      .command("export")
      .description(
        "lead or observer: write the team's whole history to FILE as a signed bundle; prints the signing key",
      )
      .argument("<team>", "the team's name (the token's team: a confirmation)")
      .requiredOption("-o, --output <file>", "the bundle's file"),
  ).action(async (team: string, o: ConnectionOptions & { output: string; json: boolean }) => {
    // Written to the file as it arrives (a bundle of any size), beside the final name until
    // it is checked: a refused or cut export leaves no file that looks like a bundle.
    const partial = `${o.output}.partial`;
    const out = createWriteStream(partial, { mode: 0o600 });
    let bytes = 0;
    let publicKey = "";
    let counts: Record<string, bigint> = {};
    try {
      for await (const res of clientFor(o).rpc.exportTeam({})) {
        bytes += res.chunk.byteLength;
        if (!out.write(res.chunk)) await once(out, "drain");
        if (res.publicKey !== "") {
          publicKey = res.publicKey;
          counts = res.counts;
        }
      }
      out.end();
      await finished(out);
    } catch (err) {
      out.destroy();
      rmSync(partial, { force: true });
      throw err;
    }
    const verdict = await checkBundleFile(partial, publicKey);
    if (verdict.manifest?.team !== team) {
      rmSync(partial, { force: true });
      throw new UsageError(
        `the token belongs to team "${verdict.manifest?.team ?? "?"}", not "${team}": nothing written`,
      );
    }
    renameSync(partial, o.output);
    const key = publicKeyOf(publicKey);
    print(
      o,
      () =>
        `wrote ${o.output}: ${bytes} bytes, ${countsText(counts)}\n` +
        `signed with key ${key ? fingerprint(key) : "?"}; keep it to verify and import (--key):\n` +
        publicKey.trimEnd(),
      () => ({
        file: o.output,
        bytes,
        counts: Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, Number(n)])),
        publicKey,
      }),
    );
  });

  program
    .command("verify")
    .description("check a bundle offline: its signature, SHA-256, counts and inbox ranges")
    .argument("<file>", "the bundle")
    .option("--key <pub>", "the key it must be signed with: a PEM file, or the PEM text")
    .option("--json", "print JSON instead of text", false)
    .action(async (file: string, o: { key?: string; json: boolean }) => {
      if (!existsSync(file)) throw new UsageError(`no file ${file}`);
      const verdict = await checkBundleFile(file, o.key === undefined ? undefined : pem(o.key));
      const key = verdict.publicKey ? publicKeyOf(verdict.publicKey) : undefined;
      print(
        o,
        () =>
          verdict.failures.length === 0
            ? `ok: team "${verdict.manifest?.team}", exported ${verdict.manifest?.exported_at}, ` +
              `${countsText(verdict.manifest?.counts ?? {})}; signed with key ${key ? fingerprint(key) : "?"}` +
              (o.key === undefined ? " (no --key given: any key's signature is accepted)" : "")
            : `refused:\n${verdict.failures.map((f) => `  ${f}`).join("\n")}`,
        () => ({
          ok: verdict.failures.length === 0,
          failures: verdict.failures,
          manifest: verdict.manifest,
        }),
      );
      if (verdict.failures.length > 0) throw new QuietExit(1);
    });

  connectionOptions(
    program
      .command("import")
      .description(
        "load a bundle into this server as a new team; prints its members' new tokens (shown only once)",
      )
      .argument("<file>", "the bundle")
      .option("--as <team>", "the new team's name (default: the bundle's)")
      .option(
        "--key <pub>",
        "the key it must be signed with (a PEM file, or the PEM text); default: this server's own",
      ),
    "admin",
  ).action(
    async (file: string, o: ConnectionOptions & { as?: string; key?: string; json: boolean }) => {
      if (!existsSync(file)) throw new UsageError(`no file ${file}`);
      // The file is streamed in chunks as the call sends them: a bundle of any size.
      const res = await clientFor(o, "admin").rpc.importTeam(
        importRequests(createReadStream(file), {
          team: o.as ?? "",
          publicKey: o.key === undefined ? "" : pem(o.key),
        }),
      );
      print(
        o,
        () =>
          [
            `imported team "${res.team}": ${countsText(res.counts)}`,
            "new tokens (shown only once):",
            ...res.members.map(
              (m) =>
                `  ${m.name} (${memberRoleName(m.role)}, ${memberStatusName(m.status)}): ` +
                (m.token === "" ? "no token (stopped: the lead re-adds it)" : m.token),
            ),
          ].join("\n"),
        () => ({
          team: res.team,
          members: res.members.map((m) => ({
            name: m.name,
            role: memberRoleName(m.role),
            status: memberStatusName(m.status),
            token: m.token,
          })),
          counts: Object.fromEntries(Object.entries(res.counts).map(([k, n]) => [k, Number(n)])),
        }),
      );
    },
  );
}

/** A key option: the PEM text itself, or the file that holds it. */
function pem(value: string): string {
  if (value.includes("-----BEGIN")) return value;
  if (!existsSync(value))
    throw new UsageError(`--key: no file ${value} (give a PEM file or the PEM text)`);
  return readFileSync(value, "utf8");
}

function countsText(counts: Record<string, bigint | number>): string {
  return Object.entries(counts)
    .filter(([, n]) => Number(n) > 0)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(", ");
}
