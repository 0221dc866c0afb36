/**
 * DATABASE_URL with several hosts, as libpq and `pg_autoctl show uri` write it:
 *
 *   postgres://user@h1:5432,h2:5433,[::1]:5434/db?target_session_attrs=read-write
 *
 * pg (node-postgres) refuses such a URL ("Invalid URL"), so it is split here into one URL
 * per host, each of which pg accepts. The server only ever talks to the writable primary
 * (store/primary-pool.ts finds it), so target_session_attrs may only ask for that.
 */

export interface DatabaseHost {
  /** "h1:5432" as written in the URL: what logs and errors name. */
  readonly label: string;
  /** A one-host URL pg accepts: the original with this host alone, target_session_attrs removed. */
  readonly url: string;
}

export class DatabaseUrlError extends Error {
  override readonly name = "DatabaseUrlError";
}

// scheme, optional user info, the host list (up to the first / ? or #), the rest.
const URL_PARTS = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s;
// One entry of the host list: a name or IPv4 address, or a bracketed IPv6 one, and a port.
const HOST_ENTRY = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/;

/** What target_session_attrs may say: the server writes, so only the primary will do. */
const WRITABLE_ATTRS = new Set(["read-write", "primary"]);

/** The hosts of a DATABASE_URL, in the order written. Throws DatabaseUrlError naming the fault. */
export function parseDatabaseUrl(databaseUrl: string): DatabaseHost[] {
  const parts = URL_PARTS.exec(databaseUrl.trim());
  if (!parts) {
    throw new DatabaseUrlError(
      "DATABASE_URL must start with postgres:// or postgresql:// " +
        "(postgres://user@host1:5432,host2:5432/db?target_session_attrs=read-write)",
    );
  }
  const [, scheme = "", userInfo = "", hostList = "", rest = ""] = parts;
  const { pathAndQuery } = withoutTargetSessionAttrs(rest);
  const entries = hostList.split(",");
  if (entries.length > 1 && entries.some((e) => e === "")) {
    throw new DatabaseUrlError(`DATABASE_URL has an empty entry in its host list "${hostList}"`);
  }
  return entries.map((entry) => {
    // A single empty host is pg's default (localhost, or a socket path given as ?host=).
    if (entry !== "") {
      const m = HOST_ENTRY.exec(entry);
      const port = m?.[2] === undefined ? undefined : Number(m[2]);
      if (!m || (port !== undefined && (port < 1 || port > 65_535))) {
        throw new DatabaseUrlError(
          `DATABASE_URL host "${entry}" is not host, host:port or [ipv6]:port (port 1 to 65535)`,
        );
      }
    }
    const url = `${scheme}${userInfo}${entry}${pathAndQuery}`;
    try {
      new URL(url);
    } catch {
      throw new DatabaseUrlError(`DATABASE_URL for host "${entry}" does not parse as a URL`);
    }
    return { label: entry === "" ? "localhost" : entry, url };
  });
}

function withoutTargetSessionAttrs(rest: string): { pathAndQuery: string } {
  const hash = rest.indexOf("#");
  const beforeHash = hash >= 0 ? rest.slice(0, hash) : rest;
  const q = beforeHash.indexOf("?");
  if (q < 0) return { pathAndQuery: beforeHash };
  const path = beforeHash.slice(0, q);
  const params = new URLSearchParams(beforeHash.slice(q + 1));
  const attrs = params.getAll("target_session_attrs");
  for (const value of attrs) {
    if (!WRITABLE_ATTRS.has(value)) {
      throw new DatabaseUrlError(
        `DATABASE_URL target_session_attrs="${value}": the server writes, so it always uses ` +
          'the writable primary; use "read-write" (or "primary"), or leave it out',
      );
    }
  }
  // Untouched when there is nothing to remove: pg reads the rest as it always did.
  if (attrs.length === 0) return { pathAndQuery: beforeHash };
  params.delete("target_session_attrs");
  const query = params.toString();
  return { pathAndQuery: query ? `${path}?${query}` : path };
}
