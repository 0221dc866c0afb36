-- Protocol requests (shutdown, plan approval) and their state machine.

CREATE TABLE requests (
  -- Server-generated, unguessable: 'req_' and 128 random bits.
  id            text PRIMARY KEY,
  -- Creation order, for listing newest first and paginating (gaps are harmless here).
  position      bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  team_id       integer NOT NULL REFERENCES teams (id),
  kind          text NOT NULL CHECK (kind IN ('shutdown', 'plan_approval')),
  from_id       integer NOT NULL REFERENCES members (id),
  to_id         integer NOT NULL REFERENCES members (id),
  -- pending is the only state that changes; the others are final.
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'canceled')),
  -- team.v1.Message, protobuf binary: the message that opened the request...
  request_body  bytea NOT NULL,
  -- ...and the answer (NULL while pending, or when it expired or was canceled).
  response_body bytea,
  created_at    timestamptz NOT NULL DEFAULT now(),
  resolved_at   timestamptz,
  expires_at    timestamptz NOT NULL,
  CHECK ((status = 'pending') = (resolved_at IS NULL))
);

-- The sweeper's scan: overdue pending requests, oldest deadline first.
CREATE INDEX requests_pending_by_expiry ON requests (expires_at) WHERE status = 'pending';
-- ListRequests: a team's requests, newest first (keyset pagination on position).
CREATE INDEX requests_by_team ON requests (team_id, position DESC);
CREATE INDEX requests_by_from ON requests (from_id, position DESC);
CREATE INDEX requests_by_to ON requests (to_id, position DESC);
