import { access, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openEmbeddedDatabase } from "../../server/store/embedded-database.js";

// Each test creates clusters from nothing (initdb): on a busy two-core machine that can take
// longer than the suite's 30 s default, hence 120 s.
describe("the embedded database in a data folder", () => {
  const folders: string[] = [];
  const newFolder = async () => {
    const parent = await mkdtemp(join(tmpdir(), "tp-embedded-"));
    folders.push(parent);
    return join(parent, "data");
  };
  afterEach(async () => {
    for (const f of folders.splice(0)) await rm(f, { recursive: true, force: true });
  });

  it("creates a new folder's cluster and keeps what was written across a reopen", async () => {
    const dataDir = await newFolder();
    const first = await openEmbeddedDatabase({ dataDir });
    await access(join(dataDir, "PG_VERSION")); // the cluster is there
    await first.query("CREATE TABLE kept (v text)");
    await first.query("INSERT INTO kept VALUES ($1)", ["still here"]);
    await first.close();

    const again = await openEmbeddedDatabase({ dataDir });
    expect(await again.query("SELECT v FROM kept")).toEqual([{ v: "still here" }]);
    await again.close();
  }, 120_000);

  it("runs with 16MB of shared buffers unless told otherwise", async () => {
    const byDefault = await openEmbeddedDatabase({ dataDir: await newFolder() });
    expect(await byDefault.query("SHOW shared_buffers")).toEqual([{ shared_buffers: "16MB" }]);
    await byDefault.close();

    const bigger = await openEmbeddedDatabase({ sharedBuffers: "32MB" });
    expect(await bigger.query("SHOW shared_buffers")).toEqual([{ shared_buffers: "32MB" }]);
    await bigger.close();
  }, 120_000);
});
