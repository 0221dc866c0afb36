-- The inbox backlog cap (limit "inbox-backlog"): what an inbox holds unacked, countable in
-- the statement that takes the inbox's lock, without scanning its messages.
--
-- Messages: inboxes.last_seq - members.acked_seq (seqs have no gaps), nothing new needed.
-- Bytes: two counters whose difference is the bytes of the unacked bodies:
--   inboxes.appended_bytes  bodies appended, added to by every send in the UPDATE that
--                           takes the seq (the row is locked and written anyway);
--   members.acked_bytes     bodies acked, added to by every ack (the sum of the newly acked
--                           range, which its reader has just read).
-- A per-message running total was the other way; it would add a column to every row and a
-- window sum to the group-commit statement, where the counter costs one addition.

ALTER TABLE inboxes ADD COLUMN appended_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE members ADD COLUMN acked_bytes bigint NOT NULL DEFAULT 0;

-- Inboxes that already hold messages start from what is unacked now (acked_bytes 0).
UPDATE inboxes i SET appended_bytes = unacked.bytes
FROM (
  SELECT mb.id AS member_id, sum(octet_length(m.body)) AS bytes
  FROM members mb JOIN messages m ON m.recipient_id = mb.id AND m.seq > mb.acked_seq
  GROUP BY mb.id
) unacked
WHERE i.member_id = unacked.member_id;
