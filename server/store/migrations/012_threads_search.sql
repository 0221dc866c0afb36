-- Threads and full-text search over messages (docs/history.md).
--
-- envelope_id names one sent message: every recipient's copy of a broadcast shares it, so
-- the team's views (ListThreads, SearchMessages) show a broadcast once. thread_id is the
-- thread the message belongs to: its parent's (reply_to), its request's for every message
-- about a protocol request, else its own envelope_id. search_text is the message rendered
-- as words (server/store/search-text.ts); rows stored before this migration get it from
-- the server at start (search-backfill.ts), since their bodies are protobuf.

ALTER TABLE messages
  ADD COLUMN envelope_id text,
  ADD COLUMN thread_id text,
  ADD COLUMN reply_to text,
  ADD COLUMN search_text text,
  ADD COLUMN search tsvector GENERATED ALWAYS AS (
    to_tsvector('english'::regconfig, COALESCE(search_text, ''))) STORED;

-- Old rows: copies of one broadcast were stored by one transaction with one sender and body,
-- which is what groups them; a protocol message's thread is its request.
UPDATE messages SET envelope_id = 'env_' || md5(
  CASE WHEN to_name = '*'
    THEN concat_ws(':', team_id, feed_xid, sender_id, md5(body))
    ELSE concat_ws(':', recipient_id, seq) END);
UPDATE messages SET thread_id = COALESCE(request_id, envelope_id);

ALTER TABLE messages
  ALTER COLUMN envelope_id SET NOT NULL,
  ALTER COLUMN thread_id SET NOT NULL;

-- GetThread; a reply's parent; a protocol answer's request (whose thread it joins).
CREATE INDEX messages_thread ON messages (team_id, thread_id, feed_position);
CREATE INDEX messages_envelope ON messages (envelope_id);
CREATE INDEX messages_request ON messages (team_id, request_id) WHERE request_id IS NOT NULL;
-- What a teammate sent (its own copies are found by the primary key).
CREATE INDEX messages_sender ON messages (sender_id, feed_position);
CREATE INDEX messages_search ON messages USING gin (search);
-- The rows the start-time backfill has still to fill: empty once it ran.
CREATE INDEX messages_unsearchable ON messages (recipient_id, seq) WHERE search_text IS NULL;
