import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * How many times in a row the Stop hook has blocked one session's stop. Claude Code says
 * only whether the current stop follows a block (`stop_hook_active`), not how many, so the
 * count is kept in a small file per session and member (each hook is a new process).
 * A stop that does not follow a block starts the count again.
 */
export interface BlockCounter {
  /** Blocks so far in this run of blocks (0 when this stop follows none). */
  current(): Promise<number>;
  /** One more block. */
  add(): Promise<void>;
  /** The run ended: the stop went through. */
  reset(): Promise<void>;
}

export function createBlockCounter(options: {
  sessionId: string;
  member: string;
  continuing: boolean;
  dir?: string;
}): BlockCounter {
  const dir = options.dir ?? join(tmpdir(), "team-protocols-hooks");
  // Hashed: a session id is Claude Code's, not ours, and must not make a path.
  const key = createHash("sha256").update(`${options.sessionId}\n${options.member}`).digest("hex");
  const file = join(dir, `${key.slice(0, 32)}.stop-blocks`);
  const read = async () => {
    if (!options.continuing) return 0;
    const text = await readFile(file, "utf8").catch(() => "0");
    const n = Number.parseInt(text, 10);
    return Number.isFinite(n) && n >= 0 ? n : 0;
  };
  return {
    current: read,
    async add() {
      const n = await read();
      await mkdir(dir, { recursive: true });
      await writeFile(file, String(n + 1));
    },
    async reset() {
      await rm(file, { force: true });
    },
  };
}
