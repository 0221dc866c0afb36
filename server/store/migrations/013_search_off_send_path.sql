-- Search maintained after the send commits, not in it (docs/history.md, "Search lags the send
-- by milliseconds"). Migration 012 computed every stored copy's tsvector and updated a GIN
-- index inside the send's statement, and kept a btree of every row's thread: together they
-- cost a plain send about twice the store's CPU. Now:
--
-- * message_search holds one row per envelope (a broadcast's copies share it), its words and
--   their tsvector under the GIN index; who may see a hit is still decided by the messages
--   it joins (history-visibility.ts), so visibility is ReadInbox's as before.
-- * A statement-level trigger queues each stored envelope's id in search_pending (one small
--   row per envelope, no text, no tsvector); the search indexer (server/jobs/search-indexer.ts)
--   renders the words from the body, fills message_search and removes the queue rows in one
--   transaction, woken by the same wake-ups as WatchTeam. SearchMessages first indexes what
--   its team still has queued, so a caller finds what was committed before it searched.
-- * A statement-level trigger on DELETE removes the index row of an envelope whose last copy
--   is gone (retention, DeleteTeam): retention applies to the index as it did.
-- * The thread index holds only rows whose thread is not their own envelope (replies and
--   protocol messages); a thread's root is found by messages_envelope.
-- * Ids compare bytewise (COLLATE "C"): they are random ASCII, and the default collation's
--   comparisons cost every index insert and lookup on them.

CREATE TABLE message_search (
  envelope_id text COLLATE "C" PRIMARY KEY,
  team_id     integer NOT NULL,
  search_text text NOT NULL,
  search      tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, search_text)) STORED
);
CREATE INDEX message_search_words ON message_search USING gin (search);

-- A queue: rows live from the send's commit until the indexer's next transaction, so it stays
-- small; no index but its key (each one would cost every send).
CREATE TABLE search_pending (
  id          bigserial PRIMARY KEY,
  envelope_id text COLLATE "C" NOT NULL,
  team_id     integer NOT NULL
);

ALTER TABLE messages
  ALTER COLUMN envelope_id TYPE text COLLATE "C",
  ALTER COLUMN thread_id TYPE text COLLATE "C",
  ALTER COLUMN reply_to TYPE text COLLATE "C";

-- What 012 indexed moves over as it is; rows the start-time backfill had not reached yet
-- are queued (the indexer renders them from their bodies).
INSERT INTO message_search (envelope_id, team_id, search_text)
SELECT DISTINCT ON (envelope_id) envelope_id, team_id, search_text
FROM messages WHERE search_text IS NOT NULL
ORDER BY envelope_id, recipient_id;
INSERT INTO search_pending (envelope_id, team_id)
SELECT DISTINCT m.envelope_id, m.team_id FROM messages m
WHERE NOT EXISTS (SELECT 1 FROM message_search s WHERE s.envelope_id = m.envelope_id);

DROP INDEX messages_search;
DROP INDEX messages_unsearchable;
ALTER TABLE messages DROP COLUMN search, DROP COLUMN search_text;

DROP INDEX messages_thread;
CREATE INDEX messages_thread ON messages (thread_id) WHERE thread_id <> envelope_id;

CREATE FUNCTION queue_message_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_pending (envelope_id, team_id)
  SELECT DISTINCT envelope_id, team_id FROM stored_messages;
  RETURN NULL;
END $$;
CREATE TRIGGER messages_queue_search AFTER INSERT ON messages
  REFERENCING NEW TABLE AS stored_messages
  FOR EACH STATEMENT EXECUTE FUNCTION queue_message_search();

-- Runs after the statement's deletes, so NOT EXISTS sees them; an envelope with a copy left
-- (a broadcast acked by some recipients only) keeps its words.
CREATE FUNCTION drop_message_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM message_search s
  USING (SELECT DISTINCT envelope_id FROM deleted_messages) d
  WHERE s.envelope_id = d.envelope_id
    AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.envelope_id = d.envelope_id);
  RETURN NULL;
END $$;
CREATE TRIGGER messages_drop_search AFTER DELETE ON messages
  REFERENCING OLD TABLE AS deleted_messages
  FOR EACH STATEMENT EXECUTE FUNCTION drop_message_search();
