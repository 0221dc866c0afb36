import { afterAll, beforeAll, describe } from "vitest";
import type { Database, Queryable } from "../../server/store/database.js";
import {
  type DatabaseKind,
  databaseKinds,
  openTestDatabase,
  type TestDatabase,
} from "./databases.js";
import { uniqueName } from "./harness.js";

/**
 * Store tests set up their rows with SQL, as the store itself writes them, instead of
 * through the app and HTTP: a store test then fails for the store's reasons only, and
 * needs no server.
 */

export interface FixtureMember {
  id: number;
  teamId: number;
  name: string;
  role: "lead" | "teammate" | "observer";
}

export interface FixtureTeam {
  id: number;
  name: string;
  lead: FixtureMember;
  members: FixtureMember[];
  member(name: string): FixtureMember;
}

/**
 * A team named uniquely, its lead "team-lead" and `teammates`, each with an inbox, in one
 * statement. Token hashes are made up (unique per member): no test here authenticates.
 */
export async function insertTeam(db: Queryable, teammates: string[] = []): Promise<FixtureTeam> {
  const name = uniqueName("fixture");
  const rows = await db.query<{ id: number; team_id: number; name: string; role: string }>(
    `WITH t AS (
       INSERT INTO teams (name) VALUES ($1) RETURNING id
     ), m AS (
       INSERT INTO members (team_id, name, role, token_hash)
       SELECT t.id, n.name, CASE WHEN n.ord = 1 THEN 'lead' ELSE 'teammate' END,
              sha256(convert_to($1 || '/' || n.name, 'UTF8'))
       FROM t, unnest($2::text[]) WITH ORDINALITY AS n(name, ord)
       RETURNING id, team_id, name, role
     ), i AS (
       INSERT INTO inboxes (member_id) SELECT id FROM m
     )
     SELECT id, team_id, name, role FROM m ORDER BY id`,
    [name, ["team-lead", ...teammates]],
  );
  const members = rows.map(
    (r): FixtureMember => ({
      id: r.id,
      teamId: r.team_id,
      name: r.name,
      role: r.role as FixtureMember["role"],
    }),
  );
  const member = (n: string) => {
    const found = members.find((m) => m.name === n);
    if (!found) throw new Error(`no member "${n}" in the fixture team`);
    return found;
  };
  return { id: members[0]?.teamId ?? 0, name, lead: member("team-lead"), members, member };
}

/** One more teammate (with its inbox) in a fixture team. */
export async function insertMember(
  db: Queryable,
  team: FixtureTeam,
  name: string,
): Promise<FixtureMember> {
  const [row] = await db.query<{ id: number }>(
    `WITH m AS (
       INSERT INTO members (team_id, name, role, token_hash)
       VALUES ($1, $2, 'teammate', sha256(convert_to($3 || '/' || $2, 'UTF8')))
       RETURNING id
     ), i AS (
       INSERT INTO inboxes (member_id) SELECT id FROM m
     )
     SELECT id FROM m`,
    [team.id, name, team.name],
  );
  if (!row) throw new Error(`member "${name}" not inserted`);
  const member: FixtureMember = { id: row.id, teamId: team.id, name, role: "teammate" };
  team.members.push(member);
  return member;
}

/**
 * Runs the suite once per database kind over a migrated database of its own and nothing
 * else: no app, no HTTP server (describeEachDatabase starts both).
 */
export function describeEachStore(
  title: string,
  suite: (db: () => Database, kind: DatabaseKind) => void,
): void {
  for (const { kind, skip } of databaseKinds()) {
    describe.skipIf(skip)(`${title} [${kind}]`, () => {
      let opened: TestDatabase | undefined;
      beforeAll(async () => {
        opened = await openTestDatabase(kind);
      });
      afterAll(() => opened?.dispose());
      suite(() => {
        if (!opened) throw new Error("test database not opened");
        return opened.db;
      }, kind);
    });
  }
}
