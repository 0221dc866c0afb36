-- The team feed (WatchTeam, docs/watch.md): every envelope, request change and member change
-- of a team, readable in one order that agrees with every inbox, request and member, without
-- a team-wide lock.
--
-- Each event row takes, as column defaults when it is inserted, a position from one
-- server-wide sequence and the id of its transaction (xid8). The row is always inserted after
-- its transaction holds the row lock that orders it (the inbox, the request, the member), so
-- of two transactions that shared a lock the first has the smaller position. Readers take
-- pg_current_snapshot() and deliver what became visible since their last snapshot, ordered by
-- position: a position drawn by a transaction still in flight is never skipped.
--
-- The sequence is not cached (CACHE 1, the default): cached ranges per connection would
-- hand out positions out of real-time order, which the argument above needs.
CREATE SEQUENCE team_feed_position AS bigint;

ALTER TABLE messages ADD COLUMN feed_position bigint, ADD COLUMN feed_xid xid8;

-- Messages stored before this migration: positions in the order they were sent, and within
-- each inbox strictly by seq (the running maximum of sent_at along the inbox, so a clock that
-- stepped back cannot put seq 5 before seq 4). They all carry this migration's transaction.
UPDATE messages m SET feed_position = o.position, feed_xid = pg_current_xact_id()
FROM (
  SELECT recipient_id, seq, row_number() OVER (ORDER BY sent_upto, recipient_id, seq) AS position
  FROM (
    SELECT recipient_id, seq, max(sent_at) OVER (PARTITION BY recipient_id ORDER BY seq) AS sent_upto
    FROM messages
  ) s
) o
WHERE m.recipient_id = o.recipient_id AND m.seq = o.seq;

SELECT setval('team_feed_position', coalesce((SELECT max(feed_position) FROM messages), 0) + 1, false);

ALTER TABLE messages
  ALTER COLUMN feed_position SET DEFAULT nextval('team_feed_position'),
  ALTER COLUMN feed_position SET NOT NULL,
  ALTER COLUMN feed_xid SET DEFAULT pg_current_xact_id(),
  ALTER COLUMN feed_xid SET NOT NULL;

-- A feed read finds a window's rows by transaction id: from its first snapshot's xmin to its
-- last one's xmax, which for a live watcher is the last few transactions.
CREATE INDEX messages_feed ON messages (team_id, feed_xid);

-- A request's changes: created (pending) and its one final state. The bodies stay in requests
-- (joined when read); the events go with their request when retention deletes it.
CREATE TABLE request_events (
  feed_position bigint PRIMARY KEY DEFAULT nextval('team_feed_position'),
  feed_xid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
  team_id       integer NOT NULL REFERENCES teams (id),
  request_id    text NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
  status        text NOT NULL
                CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'canceled')),
  at            timestamptz NOT NULL
);

CREATE INDEX request_events_feed ON request_events (team_id, feed_xid);
CREATE INDEX request_events_by_request ON request_events (request_id);

-- A member's changes, with its state right after each (small rows: no body).
CREATE TABLE member_events (
  feed_position   bigint PRIMARY KEY DEFAULT nextval('team_feed_position'),
  feed_xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
  team_id         integer NOT NULL REFERENCES teams (id),
  member_id       integer NOT NULL REFERENCES members (id),
  change          text NOT NULL CHECK (change IN ('added', 'stopped', 'removed', 'permission_mode')),
  role            text NOT NULL,
  status          text NOT NULL,
  permission_mode text NOT NULL,
  at              timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX member_events_feed ON member_events (team_id, feed_xid);
CREATE INDEX member_events_by_age ON member_events (at);

-- Observers: read-only members (docs/watch.md).
ALTER TABLE members DROP CONSTRAINT members_role_check,
  ADD CONSTRAINT members_role_check CHECK (role IN ('lead', 'teammate', 'observer'));
