import { mkdtemp, readdir } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { readState, type UpState, writeState } from "../../client/cli/up/state.js";

/**
 * `team up` saves up.json on every change of a member's process, so saves overlap; `team
 * down` and `team status` read it meanwhile. Every read must find whole JSON, and the last
 * save must win.
 */
it("overlapping saves of up.json: each read finds whole JSON, the last save wins, no temporary file is left", async () => {
  const dir = await mkdtemp(join(os.tmpdir(), "tp-up-state-"));
  const state = (i: number): UpState => ({
    team: "t",
    url: "http://127.0.0.1:1",
    supervisorPid: process.pid,
    // Sizes that differ, so a torn file would show.
    members: Array.from({ length: (i % 7) + 1 }, (_, k) => ({
      name: `m${k}`,
      state: "running",
      restarts: i,
      since: new Date(0).toISOString(),
    })),
  });
  const saves: Promise<void>[] = [];
  const reads: Promise<UpState | undefined>[] = [];
  for (let i = 0; i < 60; i++) {
    saves.push(writeState(dir, state(i)));
    if (i % 5 === 4) reads.push(readState(dir));
  }
  await Promise.all(saves);
  for (const read of await Promise.all(reads)) {
    if (read !== undefined) expect(read.team).toBe("t");
  }
  expect(await readState(dir)).toEqual(state(59));
  expect(await readdir(dir)).toEqual(["up.json"]);
});
