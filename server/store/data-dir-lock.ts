import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import lockfile from "proper-lockfile";

const OWNER_FILE = "owner.pid";

/**
 * Locks the embedded database's folder for this process (PGlite itself would let two
 * processes open it, which corrupts it). proper-lockfile's lock is a `<dir>.lock` folder
 * refreshed while we run; a process killed with -9 leaves it behind until it goes stale.
 * The holder's pid is kept inside it, so a lock whose holder is gone is taken over at
 * once instead of after the stale period.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockDir = `${dataDir}.lock`;
  const take = async () => {
    const release = await lockfile.lock(dataDir, { stale: 15_000, update: 5_000 });
    await writeFile(join(lockDir, OWNER_FILE), String(process.pid)).catch(() => {});
    return release;
  };
  try {
    return await take();
  } catch (err) {
    if ((err as { code?: string }).code !== "ELOCKED" || (await holderAlive(lockDir))) {
      throw new Error(
        `data directory ${dataDir} is in use by another team-protocols process ` +
          `(lock ${lockDir}); stop it or set DATA_DIR to another folder`,
        { cause: err },
      );
    }
    await rm(lockDir, { recursive: true, force: true });
    return take();
  }
}

async function holderAlive(lockDir: string): Promise<boolean> {
  const pid = Number(await readFile(join(lockDir, OWNER_FILE), "utf8").catch(() => "NaN"));
  if (!Number.isInteger(pid) || pid <= 0) return true; // unknown holder: assume it lives
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}
