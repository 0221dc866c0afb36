import { describe, expect, it } from "vitest";
import { parseConfig } from "../../server/config.js";
import { DatabaseUrlError, parseDatabaseUrl } from "../../server/store/database-url.js";

/** DATABASE_URL with several hosts (libpq's form, as `pg_autoctl show uri` prints it). */
describe("DATABASE_URL parsing", () => {
  it("splits a host list into one URL per host, in order, keeping user, database and other parameters", () => {
    const hosts = parseDatabaseUrl(
      "postgres://app:s%40cret@db1:5432,db2:5433,[::1]:5434/team?target_session_attrs=read-write&sslmode=disable",
    );
    expect(hosts).toEqual([
      { label: "db1:5432", url: "postgres://app:s%40cret@db1:5432/team?sslmode=disable" },
      { label: "db2:5433", url: "postgres://app:s%40cret@db2:5433/team?sslmode=disable" },
      { label: "[::1]:5434", url: "postgres://app:s%40cret@[::1]:5434/team?sslmode=disable" },
    ]);
    // Each is a URL pg accepts: one host, the port, the user and the database as written.
    for (const h of hosts) expect(new URL(h.url).pathname).toBe("/team");
  });

  it("leaves a one-host URL exactly as written (pg reads it as it always did)", () => {
    for (const url of [
      "postgres://postgres@127.0.0.1:5432/postgres",
      "postgresql://u:p@localhost/db?options=-c%20search_path%3Dx&application_name=a+b",
      "postgres:///db?host=/var/run/postgresql",
    ]) {
      expect(parseDatabaseUrl(url).map((h) => h.url)).toEqual([url]);
    }
    expect(parseDatabaseUrl("postgres://h/db")[0]?.label).toBe("h");
  });

  it("takes target_session_attrs=read-write or primary, and removes it (pg does not know it)", () => {
    for (const attrs of ["read-write", "primary"]) {
      expect(parseDatabaseUrl(`postgres://a:1,b:2/db?target_session_attrs=${attrs}`)).toEqual([
        { label: "a:1", url: "postgres://a:1/db" },
        { label: "b:2", url: "postgres://b:2/db" },
      ]);
    }
    // Hosts without a port use pg's default port.
    expect(parseDatabaseUrl("postgres://a,b/db").map((h) => h.url)).toEqual([
      "postgres://a/db",
      "postgres://b/db",
    ]);
  });

  it("refuses what it cannot serve, naming the part at fault", () => {
    const refusal = (url: string) => {
      try {
        parseDatabaseUrl(url);
      } catch (err) {
        expect(err).toBeInstanceOf(DatabaseUrlError);
        return (err as Error).message;
      }
      return "accepted";
    };
    expect(refusal("mysql://a/db")).toMatch(/must start with postgres:\/\//);
    expect(refusal("postgres://a:1,,b:2/db")).toMatch(/empty entry/);
    expect(refusal("postgres://a:1,b:99999/db")).toMatch(/host "b:99999"/);
    expect(refusal("postgres://a:1,b:x/db")).toMatch(/host "b:x"/);
    // The server writes: a standby or "any" server would fail every Send.
    for (const attrs of ["any", "read-only", "standby", "prefer-standby"]) {
      expect(refusal(`postgres://a,b/db?target_session_attrs=${attrs}`)).toMatch(
        new RegExp(`target_session_attrs="${attrs}".*read-write`),
      );
    }
  });

  it("a DATABASE_URL the server cannot use is refused at start, naming the variable", () => {
    expect(() =>
      parseConfig([], { DATABASE_URL: "postgres://a,b/db?target_session_attrs=any" }),
    ).toThrow(/target_session_attrs="any"/);
    const config = parseConfig([], {
      DATABASE_URL: "postgres://a:1,b:2/db?target_session_attrs=read-write",
    });
    expect(config.databaseUrl).toBe("postgres://a:1,b:2/db?target_session_attrs=read-write");
    expect(config.dbStatementTimeoutMs).toBe(15_000);
    expect(config.dbConnectTimeoutMs).toBe(3_000);
  });
});
