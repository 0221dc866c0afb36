import pg from "pg";
import type { DatabaseHost } from "./database-url.js";
import { DatabaseUnavailableError } from "./sql-errors.js";

/**
 * Read-only, either way: a standby is in recovery; a node pg_auto_failover has just promoted
 * reports not-in-recovery but refuses writes (default_transaction_read_only) until the old
 * primary is known to be demoted, for up to the monitor's primary_demote_timeout. Only a
 * server where both are false takes our writes.
 */
const READ_ONLY_SQL =
  "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool AS read_only";

/** Whether the server under `client` refuses writes now. */
export async function probeReadOnly(client: Pick<pg.ClientBase, "query">): Promise<boolean> {
  const rows = (await client.query<{ read_only: boolean }>(READ_ONLY_SQL)).rows;
  return rows[0]?.read_only !== false;
}

export interface FindPrimaryOptions {
  /** A host that has not answered by then counts as down. */
  connectTimeoutMs: number;
  /** Extra pg client settings for the probing connections (TCP keepalive, for one). */
  client?: Omit<pg.ClientConfig, "connectionString"> | undefined;
}

/** What one host said when asked: writable, read-only, or the error that kept it from answering. */
export type HostAnswer =
  | { host: DatabaseHost; readOnly: boolean }
  | { host: DatabaseHost; error: unknown };

/** Asks one host whether it takes writes, on a connection of its own. */
export async function askHost(
  host: DatabaseHost,
  options: FindPrimaryOptions,
): Promise<HostAnswer> {
  const client = new pg.Client({
    ...options.client,
    connectionString: host.url,
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.connectTimeoutMs,
    application_name: "team-protocols-discovery",
  });
  // A connection lost while we ask must fail the question, not the process.
  client.on("error", () => {});
  try {
    await client.connect();
    return { host, readOnly: await probeReadOnly(client) };
  } catch (error) {
    return { host, error };
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The writable primary among `hosts`: all are asked at once (a dead host costs one connect
 * timeout, not one per host in turn), and the first in the list's order that takes writes
 * wins. Throws DatabaseUnavailableError saying what each host answered when none does.
 */
export async function findWritablePrimary(
  hosts: readonly DatabaseHost[],
  options: FindPrimaryOptions,
): Promise<DatabaseHost> {
  const answers = await Promise.all(hosts.map((h) => askHost(h, options)));
  const writable = answers.find((a) => "readOnly" in a && !a.readOnly);
  if (writable) return writable.host;
  const said = answers.map((a) =>
    "readOnly" in a
      ? `${a.host.label} is read-only`
      : `${a.host.label}: ${(a.error as Error)?.message ?? String(a.error)}`,
  );
  throw new DatabaseUnavailableError(`no writable primary found (${said.join("; ")})`);
}
