import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * What `team up` keeps beside the team file, in `.team/<team>/`: the tokens (mode 0600, never
 * printed), each member's MCP configuration and log, and `up.json`, the supervisor's record
 * of its processes that `team status` and `team down` read.
 */

export interface MemberProcessState {
  name: string;
  /** starting | running | restarting | exited | stopped */
  state: "starting" | "running" | "restarting" | "exited" | "stopped";
  pid?: number | undefined;
  restarts: number;
  lastExit?: string;
  since: string;
}

export interface UpState {
  team: string;
  url: string;
  /** The `team up` process supervising the members. */
  supervisorPid: number;
  members: MemberProcessState[];
}

export function stateDir(fileDir: string, team: string): string {
  return join(fileDir, ".team", team);
}

export const paths = (dir: string) => ({
  leadToken: join(dir, "lead.token"),
  state: join(dir, "up.json"),
  memberDir: (name: string) => join(dir, "members", name),
  token: (name: string) => join(dir, "members", name, "token"),
  mcpConfig: (name: string) => join(dir, "members", name, "mcp.json"),
  log: (name: string) => join(dir, "members", name, "log"),
});

/** Writes a secret readable by this user only (0600), whole, then renamed into place. */
export async function writeSecret(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text, { mode: 0o600 });
  // The mode above is subject to umask; this is not.
  await chmod(`${path}.tmp`, 0o600);
  await rename(`${path}.tmp`, path);
}

export async function readSecret(path: string): Promise<string | undefined> {
  return readFile(path, "utf8").then(
    (t) => t.trim() || undefined,
    () => undefined,
  );
}

export async function ensureDir(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 });
}

/** Writes of up.json in this process, one after another (the supervisor saves on every change). */
let stateWrites: Promise<unknown> = Promise.resolve();
let stateWriteCount = 0;

/**
 * Saves up.json whole: the state at the time of the call, written to a file of its own and
 * renamed into place, after every earlier save of this process. Two saves sharing one
 * temporary file once interleaved, and `team down` read torn JSON.
 */
export function writeState(dir: string, state: UpState): Promise<void> {
  const file = paths(dir).state;
  const text = `${JSON.stringify(state, null, 2)}\n`;
  const tmp = `${file}.${process.pid}.${++stateWriteCount}.tmp`;
  const write = stateWrites.then(async () => {
    await writeFile(tmp, text);
    await rename(tmp, file);
  });
  stateWrites = write.catch(() => undefined);
  return write;
}

export async function readState(dir: string): Promise<UpState | undefined> {
  return readFile(paths(dir).state, "utf8").then(
    (t) => JSON.parse(t) as UpState,
    () => undefined,
  );
}

/** Whether a process of that id is alive (signal 0 checks without signalling). */
export function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
