-- The history's side tables are per team, and ListThreads and SearchMessages stop early
-- (docs/history.md).
--
-- * message_search is keyed by (team_id, envelope_id). Envelope ids are unique within a team
--   only: a bundle imported into the server it came from (a copy of a team) holds the
--   original's ids under a new team. Keyed by the id alone, the copy's words were never
--   stored (the indexer's insert met the original's row) and the copy found nothing; a
--   copy's delete trigger looked for copies server-wide.
-- * message_search.position: the feed position of one of the envelope's copies, so a search
--   can sort its matches newest first and rank only the newest (server/store/search.ts). No
--   btree on it: a walk of one stopping at enough matches was what the planner chose for
--   middling words and phrases too, far slower (bench/README.md).
-- * thread_activity: for each thread, the feed position of its newest message as each
--   reader sees it (reader 0: the whole team, what the lead and observers read; a member:
--   what it received or sent, what a teammate reads), kept by the search indexer after
--   the send commits (not in the send) and recomputed for the threads a delete touches.
--   ListThreads walks it newest first through its index and stops after a page, instead of
--   aggregating every row of the reader's team.

ALTER TABLE message_search DROP CONSTRAINT message_search_pkey;
ALTER TABLE message_search ADD PRIMARY KEY (team_id, envelope_id);
ALTER TABLE message_search ADD COLUMN position bigint;

-- Words whose team holds no copy any more (the original of a copy deleted) go; a copy's
-- envelopes that were never indexed are queued.
DELETE FROM message_search s
WHERE NOT EXISTS (SELECT 1 FROM messages m
                  WHERE m.team_id = s.team_id AND m.envelope_id = s.envelope_id);
UPDATE message_search s SET position = (
  SELECT min(m.feed_position) FROM messages m
  WHERE m.team_id = s.team_id AND m.envelope_id = s.envelope_id);
ALTER TABLE message_search ALTER COLUMN position SET NOT NULL;
INSERT INTO search_pending (envelope_id, team_id)
SELECT DISTINCT m.envelope_id, m.team_id FROM messages m
WHERE NOT EXISTS (SELECT 1 FROM message_search s
                  WHERE s.team_id = m.team_id AND s.envelope_id = m.envelope_id)
  AND NOT EXISTS (SELECT 1 FROM search_pending p
                  WHERE p.team_id = m.team_id AND p.envelope_id = m.envelope_id);

CREATE TABLE thread_activity (
  team_id       integer NOT NULL,
  -- 0: the whole team; else a member id (what it received or sent).
  reader_id     integer NOT NULL,
  thread_id     text COLLATE "C" NOT NULL,
  last_position bigint NOT NULL,
  PRIMARY KEY (team_id, reader_id, thread_id)
);
CREATE INDEX thread_activity_recent ON thread_activity (team_id, reader_id, last_position);

INSERT INTO thread_activity (team_id, reader_id, thread_id, last_position)
SELECT m.team_id, r.reader_id, m.thread_id, max(m.feed_position)
FROM messages m
CROSS JOIN LATERAL (VALUES (0), (m.recipient_id), (m.sender_id)) r (reader_id)
WHERE r.reader_id IS NOT NULL
GROUP BY 1, 2, 3;

-- Runs after the statement's deletes, so NOT EXISTS sees them; an envelope with a copy left
-- in its team (a broadcast acked by some recipients only) keeps its words. The threads the
-- deleted rows were in get their activity again from what is left of them (a thread with
-- nothing left loses its rows).
CREATE OR REPLACE FUNCTION drop_message_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM message_search s
  USING (SELECT DISTINCT team_id, envelope_id FROM deleted_messages) d
  WHERE s.team_id = d.team_id AND s.envelope_id = d.envelope_id
    AND NOT EXISTS (SELECT 1 FROM messages m
                    WHERE m.envelope_id = d.envelope_id AND m.team_id = d.team_id);
  DELETE FROM thread_activity a
  USING (SELECT DISTINCT team_id, thread_id FROM deleted_messages) d
  WHERE a.team_id = d.team_id AND a.thread_id = d.thread_id;
  -- GREATEST: an indexer may have added a newer message of the thread meanwhile.
  INSERT INTO thread_activity (team_id, reader_id, thread_id, last_position)
  SELECT m.team_id, r.reader_id, m.thread_id, max(m.feed_position)
  FROM (SELECT DISTINCT team_id, thread_id FROM deleted_messages) d
  JOIN messages m ON m.team_id = d.team_id AND m.thread_id = d.thread_id
       AND (m.envelope_id = d.thread_id OR m.thread_id <> m.envelope_id)
  CROSS JOIN LATERAL (VALUES (0), (m.recipient_id), (m.sender_id)) r (reader_id)
  WHERE r.reader_id IS NOT NULL
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (team_id, reader_id, thread_id) DO UPDATE
    SET last_position = GREATEST(thread_activity.last_position, EXCLUDED.last_position);
  RETURN NULL;
END $$;
