-- Leases (docs/protocols.md, "Leases"): a member's claim on a path glob or a named resource
-- for a while. Overlap is decided in the server (domain/lease-patterns.ts: globs do not
-- index), under a lock on the team's row, so of racing acquires exactly one is held.

CREATE TABLE leases (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  lease_id    text NOT NULL UNIQUE,
  team_id     integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  holder_id   integer NOT NULL REFERENCES members (id) ON DELETE CASCADE,
  resource    text NOT NULL CHECK (length(resource) BETWEEN 1 AND 1024),
  mode        text NOT NULL CHECK (mode IN ('exclusive', 'shared')),
  reason      text NOT NULL DEFAULT '' CHECK (length(reason) <= 500),
  acquired_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at  timestamptz NOT NULL
);

-- The live leases of a team (every acquire reads them); the sweeper's expired ones.
CREATE INDEX leases_by_team ON leases (team_id, expires_at);
-- A stopped or removed member's leases, released in its transaction.
CREATE INDEX leases_by_holder ON leases (holder_id);
