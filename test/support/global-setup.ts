import pg from "pg";
import type { TestProject } from "vitest/node";
import { createDatabaseTemplates } from "./database-templates.js";

/** The PostgreSQL the suite creates its throwaway databases on. */
export const DEFAULT_TEST_PG_URL = "postgres://postgres@127.0.0.1:5432/postgres";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of a reachable PostgreSQL, or "" when the PostgreSQL suite is skipped. */
    pgAdminUrl: string;
    /** The migrated PGlite data folder (a tarball) each embedded test database starts from. */
    embeddedTemplatePath: string;
    /** The migrated PostgreSQL database each test database is cloned from ("" when skipped). */
    pgTemplateDatabase: string;
  }
}

/**
 * Decides once per run whether the PostgreSQL suite runs. Without a server the embedded
 * suite still runs and the skip is said plainly, at the start and as the run's last line;
 * under CI=true a missing server fails. The race proofs (one winner, one owner, the backlog
 * cap, WatchTeam's order) are proofs on PostgreSQL only, so a run without it fails at the
 * end too unless ALLOW_EMBEDDED_ONLY=1 says that is what was meant.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const url = process.env.TEST_DATABASE_URL || DEFAULT_TEST_PG_URL;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    project.provide("pgAdminUrl", url);
  } catch (err) {
    const why = `PostgreSQL is not reachable at ${url} (${(err as Error).message})`;
    if (process.env.CI === "true") {
      throw new Error(`${why}; the PostgreSQL suite is mandatory under CI=true`);
    }
    process.stdout.write(
      `\n*** SKIPPING the PostgreSQL suite: ${why}.\n` +
        "*** Only the embedded-database suite runs. Set TEST_DATABASE_URL to run it.\n\n",
    );
    project.provide("pgAdminUrl", "");
  } finally {
    await client.end().catch(() => {});
  }
  const skipped = project.getProvidedContext().pgAdminUrl === "";
  const templates = await createDatabaseTemplates(project.getProvidedContext().pgAdminUrl);
  project.provide("embeddedTemplatePath", templates.embeddedTemplatePath);
  project.provide("pgTemplateDatabase", templates.pgTemplateDatabase);
  return async () => {
    await templates.dispose();
    if (!skipped) return;
    const line =
      `*** The race proofs did NOT run: PostgreSQL was not reachable at ${url}; ` +
      "the embedded database's passes of them are functional checks only.";
    process.stdout.write(`\n${line}\n`);
    if (process.env.ALLOW_EMBEDDED_ONLY !== "1") {
      // vitest logs an error thrown here and still exits 0: the exit code is set instead.
      process.stderr.write(
        "*** Failing the run: start PostgreSQL (or set TEST_DATABASE_URL), or set " +
          "ALLOW_EMBEDDED_ONLY=1 to accept a run without them.\n",
      );
      process.exitCode = 1;
    }
  };
}
