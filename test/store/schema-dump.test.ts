import { readFile } from "node:fs/promises";
import { describe, expect, inject, it } from "vitest";
import { dumpMigratedSchema, normalizeDump, SCHEMA_FILE } from "../../scripts/schema-dump.js";
import { loadMigrations } from "../../server/store/migrate.js";

describe.skipIf(inject("pgAdminUrl") === "")("the committed schema dump", () => {
  it("is what the shipped migrations make (what `npm run check-schema` checks in CI)", async () => {
    const fresh = await dumpMigratedSchema(inject("pgAdminUrl"));
    expect(fresh).toBe(await readFile(SCHEMA_FILE, "utf8"));
    // Readable, and stable: no run-specific lines survive the normalization.
    expect(fresh).toContain("CREATE TABLE public.messages (");
    expect(fresh).not.toMatch(/\\restrict|Dumped (from|by)/);
  }, 60_000);

  it("differs as soon as a migration changes the schema, so the check can fail", async () => {
    const migrations = await loadMigrations();
    const extra = {
      version: migrations.length + 1,
      name: `${String(migrations.length + 1).padStart(3, "0")}_extra`,
      sql: "ALTER TABLE inboxes ADD COLUMN extra integer;\n",
    };
    const changed = await dumpMigratedSchema(inject("pgAdminUrl"), [...migrations, extra]);
    expect(changed).not.toBe(await readFile(SCHEMA_FILE, "utf8"));
    expect(changed).toContain("extra integer");
  }, 60_000);
});

describe("normalizeDump", () => {
  it("drops what changes between runs and machines, and keeps the schema", () => {
    const a = normalizeDump(
      "--\n\\restrict AbC123\n\n-- Dumped from database version 15.20\n" +
        "SET lock_timeout = 0;\nSELECT pg_catalog.set_config('search_path', '', false);\n\n\n\n" +
        "CREATE TABLE public.t (x integer);\n\\unrestrict AbC123\n",
    );
    const b = normalizeDump(
      "--\n\\restrict ZyX987\n\n-- Dumped from database version 15.21\n" +
        "SET lock_timeout = 0;\nCREATE TABLE public.t (x integer);\n\\unrestrict ZyX987\n",
    );
    expect(a).toBe(b);
    expect(a).toContain("CREATE TABLE public.t (x integer);");
    expect(a).not.toMatch(/restrict|Dumped|SET |set_config|\n\n\n/);
  });
});
