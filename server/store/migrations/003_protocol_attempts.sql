-- The protocol journal: every protocol step a member attempted (a Send of a structured
-- message, a CancelRequest), accepted or refused. Append-only: the triggers below refuse
-- to change or delete a row, so what an agent tried cannot be rewritten afterwards.

CREATE TABLE protocol_attempts (
  -- Journal order (identity: a row that commits late may show up behind a larger id).
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id     integer NOT NULL REFERENCES teams (id),
  -- The caller, as the auth interceptor resolved it.
  member_id   integer NOT NULL REFERENCES members (id),
  at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- The Message case sent (e.g. 'shutdown_response'), or 'cancel_request'.
  action      text NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
  -- What the caller wrote, capped: a refused attempt may carry any garbage.
  to_name     text NOT NULL DEFAULT '' CHECK (length(to_name) <= 128),
  request_id  text NOT NULL DEFAULT '' CHECK (length(request_id) <= 128),
  outcome     text NOT NULL CHECK (outcome IN ('accepted', 'refused')),
  -- For a refusal: the rule id ('' when no protocol rule refused it), the code, the message.
  rule        text NOT NULL DEFAULT '' CHECK (length(rule) <= 64),
  code        text NOT NULL DEFAULT '' CHECK (length(code) <= 64),
  message     text NOT NULL DEFAULT '' CHECK (length(message) <= 1024),
  CHECK ((outcome = 'refused') = (code <> ''))
);

-- ListAttempts: a team's journal newest first, or one member's, or one request's.
CREATE INDEX protocol_attempts_by_team ON protocol_attempts (team_id, id DESC);
CREATE INDEX protocol_attempts_by_member ON protocol_attempts (member_id, id DESC);
CREATE INDEX protocol_attempts_by_request ON protocol_attempts (team_id, request_id, id DESC)
  WHERE request_id <> '';

CREATE FUNCTION protocol_attempts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'protocol_attempts is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER protocol_attempts_no_change
  BEFORE UPDATE OR DELETE ON protocol_attempts
  FOR EACH ROW EXECUTE FUNCTION protocol_attempts_append_only();

CREATE TRIGGER protocol_attempts_no_truncate
  BEFORE TRUNCATE ON protocol_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION protocol_attempts_append_only();
