-- Teams, their members, and one durable inbox per member.

CREATE TABLE teams (
  id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
  id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id         integer NOT NULL REFERENCES teams (id),
  name            text NOT NULL,
  role            text NOT NULL CHECK (role IN ('lead', 'teammate')),
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'stopped')),
  permission_mode text NOT NULL DEFAULT 'default'
                  CHECK (permission_mode IN ('default', 'accept_edits', 'bypass_permissions', 'plan')),
  -- sha256 of the bearer token; the token itself is never stored.
  token_hash      bytea NOT NULL UNIQUE,
  -- Everything up to here is consumed: where a bare Subscribe / ReadInbox resumes.
  acked_seq       bigint NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_seen_at    timestamptz,
  stopped_at      timestamptz,
  UNIQUE (team_id, name)
);

-- Exactly one lead per team.
CREATE UNIQUE INDEX members_one_lead ON members (team_id) WHERE role = 'lead';

-- The row whose lock orders an inbox's seqs. Kept apart from members so that acks and
-- last-seen updates never queue behind a send that holds this lock through its commit.
-- A send takes the lock, so seqs commit in order: a reader that sees seq n has already
-- been able to see every seq below n (no row ever commits "late" behind a larger seq).
CREATE TABLE inboxes (
  member_id integer PRIMARY KEY REFERENCES members (id),
  last_seq  bigint NOT NULL DEFAULT 0
);

-- One row per recipient: a broadcast to n members is n rows with their own seqs.
CREATE TABLE messages (
  recipient_id integer NOT NULL REFERENCES members (id),
  seq          bigint NOT NULL,
  team_id      integer NOT NULL REFERENCES teams (id),
  -- NULL for messages the server writes itself.
  sender_id    integer REFERENCES members (id),
  from_name    text NOT NULL,
  -- The addressee as the sender wrote it: a member name or '*'.
  to_name      text NOT NULL,
  request_id   text,
  message_id   text,
  -- Which case of team.v1.Message the body holds (text, shutdown_request, ...).
  kind         text NOT NULL,
  -- team.v1.Message, protobuf binary.
  body         bytea NOT NULL,
  sent_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (recipient_id, seq)
);

-- Idempotent sends: one row per (sender, message_id) holding the first call's result.
CREATE TABLE sends (
  sender_id   integer NOT NULL REFERENCES members (id),
  message_id  text NOT NULL,
  -- sha256 over the addressee and the message, to refuse a key reused for another message.
  fingerprint bytea NOT NULL,
  -- The first call's result: [{memberId, to, seq}], and the request it opened, if any.
  deliveries  jsonb,
  request_id  text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sender_id, message_id)
);
