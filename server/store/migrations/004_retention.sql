-- Retention: old data may be deleted by the retention job (server/jobs/retention.ts), and
-- by nothing else. The journal stays append-only for every other statement: its trigger
-- now lets a DELETE through only in a transaction that set team_protocols.retention to
-- 'on' (SET LOCAL, which only the retention job does); UPDATE and TRUNCATE stay refused.

CREATE OR REPLACE FUNCTION protocol_attempts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('team_protocols.retention', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'protocol_attempts is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;

-- The job finds the journal's and finished requests' old rows by age.
CREATE INDEX protocol_attempts_by_age ON protocol_attempts (at);
CREATE INDEX requests_finished_by_age ON requests (resolved_at) WHERE status <> 'pending';
CREATE INDEX sends_by_age ON sends (created_at);
