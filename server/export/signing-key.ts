import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The file in the embedded database's data folder that holds the generated key. */
export const SIGNING_KEY_FILE = "export-signing-key.pem";

/**
 * The Ed25519 key ExportTeam signs bundles with:
 * - EXPORT_SIGNING_KEY, when set: the PEM text of a PKCS#8 private key, or the path of a file
 *   holding it (several replicas on one PostgreSQL set the same key, so any of them signs
 *   for the team);
 * - else, on the embedded database, a key generated once into the data folder (mode 0600),
 *   so a server keeps signing with the same key across restarts;
 * - else (PostgreSQL without the setting) none: ExportTeam is refused, naming the setting.
 *   A key is not generated into the database: whoever reads the database could then sign.
 */
export function loadSigningKey(options: {
  configured: string | undefined;
  dataDir: string | undefined;
}): KeyObject | undefined {
  const { configured, dataDir } = options;
  if (configured !== undefined && configured !== "") {
    const pem = configured.includes("-----BEGIN") ? configured : readFileSync(configured, "utf8");
    return ed25519(createPrivateKey(pem), "EXPORT_SIGNING_KEY");
  }
  if (dataDir === undefined) return undefined;
  const file = path.join(dataDir, SIGNING_KEY_FILE);
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync("ed25519");
    const pem = privateKey.export({ type: "pkcs8", format: "pem" });
    try {
      // "wx": of two processes starting at once, one writes and the other reads its key.
      writeFileSync(file, pem, { flag: "wx", mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return ed25519(createPrivateKey(readFileSync(file, "utf8")), file);
}

function ed25519(key: KeyObject, source: string): KeyObject {
  if (key.asymmetricKeyType !== "ed25519") {
    throw new Error(`${source}: an Ed25519 private key is needed, got ${key.asymmetricKeyType}`);
  }
  return key;
}
