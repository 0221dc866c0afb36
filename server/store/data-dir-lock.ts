import { readFile, rm, writeFile } from "node:fs/promises";
import lockfile from "proper-lockfile";

/**
 * Locks the embedded database's folder for this process (PGlite itself would let two
 * processes open it, which corrupts it). proper-lockfile's lock is a `<dir>.lock` folder
 * refreshed while we run; a process killed with -9 leaves it behind until it goes stale.
 * The holder's pid is kept beside it, so a lock whose holder is gone is taken over at once
 * instead of after the stale period.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockDir = `${dataDir}.lock`;
  // Beside the lock folder, not in it: proper-lockfile watches the folder's mtime, and a
  // file written inside would make it think the lock was taken from us.
  const ownerFile = `${dataDir}.lock-owner`;
  const take = async () => {
    const release = await lockfile.lock(dataDir, { stale: 15_000, update: 5_000 });
    await writeFile(ownerFile, String(process.pid));
    return async () => {
      await rm(ownerFile, { force: true });
      await release();
    };
  };
  try {
    return await take();
  } catch (err) {
    if ((err as { code?: string }).code !== "ELOCKED" || (await holderAlive(ownerFile))) {
      // The code marks a mistake in the setup: main prints it as one plain line.
      throw Object.assign(
        new Error(
          `data directory ${dataDir} is in use by another team-protocols process ` +
            `(lock ${lockDir}); stop it or set DATA_DIR to another folder`,
          { cause: err },
        ),
        { code: "DATA_DIR_IN_USE" },
      );
    }
    await rm(lockDir, { recursive: true, force: true });
    return take();
  }
}

async function holderAlive(ownerFile: string): Promise<boolean> {
  const pid = Number(await readFile(ownerFile, "utf8").catch(() => "NaN"));
  if (!Number.isInteger(pid) || pid <= 0) return true; // unknown holder: assume it lives
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM";
  }
}
