-- Presence (docs/presence.md): what the server last saw of each member, and the presence it
-- last announced in the team feed.
--
-- last_seen_at (001) is written at most every few seconds per member; last_seen_via says how
-- it was seen. presence is not the truth of the moment (ListMembers computes that from
-- last_seen_at): it is the state the presence job last announced with a 'presence' member
-- event, so the job finds transitions by comparing the two, and each one is announced once
-- even with several server processes (the job changes the row and writes the event in one
-- statement, under the member's row lock).
ALTER TABLE members
  ADD COLUMN last_seen_via text CHECK (last_seen_via IN ('stream', 'mcp', 'hook', 'rpc')),
  ADD COLUMN presence text NOT NULL DEFAULT 'offline'
    CHECK (presence IN ('online', 'idle', 'offline'));

-- A member event carries the presence it announces and what the server had seen; older
-- events and other changes leave them null.
ALTER TABLE member_events
  DROP CONSTRAINT member_events_change_check,
  ADD CONSTRAINT member_events_change_check
    CHECK (change IN ('added', 'stopped', 'removed', 'permission_mode', 'presence')),
  ADD COLUMN presence text CHECK (presence IN ('online', 'idle', 'offline')),
  ADD COLUMN last_seen_at timestamptz,
  ADD COLUMN last_seen_via text CHECK (last_seen_via IN ('stream', 'mcp', 'hook', 'rpc'));
